// Memory profiles (seed-genai): the file format, their derivation from the GenAI
// series, and a task's real memory following one.
#include <gtest/gtest.h>

#include "tidal/core/status.h"
#include "tidal/sim/simulator.h"
#include "tidal/sim/spec.h"
#include "tidal/sim/traces/genai_profiles.h"

namespace tidal::sim {
namespace {

TEST(MemoryProfile, LinearBetweenSamplesAndRepeats) {
  MemoryProfile p;
  p.step_s = 60;
  p.share = {0.5, 1.0};
  struct Case {
    double t, want;
  };
  // The period is 120 s; from 60 s it goes back towards the first value.
  for (const Case c : {Case{0, 0.5}, {30, 0.75}, {60, 1.0}, {90, 0.75}, {120, 0.5}, {150, 0.75}}) {
    SCOPED_TRACE(c.t);
    EXPECT_DOUBLE_EQ(p.At(c.t), c.want);
  }
}

TEST(MemoryProfile, FileErrorsNameTheField) {
  struct Case {
    const char* name;
    const char* yaml;
    const char* want;
  };
  const Case cases[] = {
      {"share above one", "stepSeconds: 60\nprofiles: [{name: a, share: [0.5, 1.5]}]",
       "profiles[0].share[1]"},
      {"no step", "stepSeconds: 0\nprofiles: [{name: a, share: [1]}]", "stepSeconds"},
      {"empty share", "profiles: [{name: a, share: []}]", "profiles[0].share"},
      {"not a mapping", "[1, 2]", "expected a mapping"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      LoadMemoryProfiles(YAML::Load(c.yaml), "p.yaml");
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_NE(e.message.find(c.want), std::string::npos) << e.message;
    }
  }
}

// Found by fuzz_sim_workload: a profiles file the workload names must be
// reported under the workload's name, and only a regular file is read.
TEST(MemoryProfile, AWorkloadsProfilesFileErrorsNameTheWorkload) {
  struct Case {
    const char* name;
    std::string file;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"missing file", "no-such-profiles.yaml",
       "dir/w.yaml: memoryProfiles: dir/no-such-profiles.yaml: expected a regular YAML file of at "
       "most 64 MiB"},
      {"a device", "/dev/zero",
       "dir/w.yaml: memoryProfiles: /dev/zero: expected a regular YAML file of at most 64 MiB"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const YAML::Node root =
        YAML::Load("memoryProfiles: " + tc.file + "\nclasses: [{name: a, count: 1, gpus: 1}]");
    try {
      LoadWorkloadSpec(root, "dir/w.yaml");
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.message, tc.want);
    }
  }
}

TEST(GenaiProfiles, ResampledOnTheStepAndDividedByThePeak) {
  traces::PodUsage pod;
  pod.pod = "0123456789abcdef";
  pod.memory = {{1000, 10}, {1090, 40}, {1120, 20}};
  traces::PodUsage flat_zero;
  flat_zero.pod = "zero";
  flat_zero.memory = {{0, 0}, {60, 0}, {120, 0}};
  traces::GenaiProfileOptions o;
  o.step_s = 60;
  o.points = 5;
  o.min_points = 3;
  const auto got = traces::DeriveMemoryProfiles({pod, flat_zero}, o);
  // At 0, 60 and 120 s: 10, 10 + 30 × 60/90 = 30, and 20; the series ends before
  // 180 s; the peak is 30. The all-zero pod is left out.
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "0123456789ab");
  EXPECT_EQ(got[0].share, (std::vector<double>{0.333, 1.0, 0.667}));
  // The rendered file loads back to the same profiles.
  const auto back = LoadMemoryProfiles(
      YAML::Load(traces::RenderMemoryProfilesYaml(got, "test", "tidal traces genai-profiles")),
      "rendered");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].share, got[0].share);
  EXPECT_DOUBLE_EQ(back[0].step_s, 60);
}

TEST(SeedGenai, TheBuiltinIsTheSeedBatchWithProfiles) {
  const WorkloadSpec seed = LoadWorkload("builtin:seed");
  const WorkloadSpec genai = LoadWorkload("builtin:seed-genai");
  EXPECT_EQ(genai.name, "seed-genai");
  EXPECT_GT(genai.profiles.size(), 100u);  // 137 of the trace's 144 pods
  ASSERT_EQ(genai.classes.size(), seed.classes.size());
  for (std::size_t i = 0; i < seed.classes.size(); ++i) {
    SCOPED_TRACE(seed.classes[i].name);
    EXPECT_EQ(genai.classes[i].name, seed.classes[i].name);
    EXPECT_EQ(genai.classes[i].count, seed.classes[i].count);
    EXPECT_DOUBLE_EQ(genai.classes[i].memory_peak.hi, seed.classes[i].memory_peak.hi);
    EXPECT_TRUE(genai.classes[i].memory_profiles);
    EXPECT_FALSE(seed.classes[i].memory_profiles);
  }
}

// One task on one 24 GiB GPU, peak 12 GiB: with the ramp its memory reaches the
// peak (50 % of the GPU); following the profile [0.25, 0.5, 0.5, 0.5] it never passes half
// the peak (25 %), held from 60 to 180 s after start.
TEST(SeedGenai, RealMemoryFollowsTheProfile) {
  const ClusterSpec c = LoadClusterSpec(YAML::Load(R"(
name: one
nodes:
  - {name: n1, gpu: {model: A10, memory: 24Gi, count: 1}}
)"),
                                        "cluster");
  const char* workload = R"(
name: w
memoryProfiles: {stepSeconds: 60, profiles: [{name: p, share: [0.25, 0.5, 0.5, 0.5]}]}
classes:
  - name: t
    count: 1
    arrival: {kind: burst, start: 0s, window: 1s}
    gpus: 1
    declaredMemory: 12Gi
    memory: {context: 500Mi, peak: [12Gi, 12Gi], rampSeconds: [30, 30], profiles: PROFILES}
    duration: [10m, 10m]
    startup: 0s
)";
  struct Case {
    const char* name;
    const char* profiles;
    double peak_util;
  };
  for (const Case& tc : {Case{"ramp", "false", 0.5}, Case{"profile", "true", 0.25}}) {
    SCOPED_TRACE(tc.name);
    std::string text = workload;
    text.replace(text.find("PROFILES"), 8, tc.profiles);
    const WorkloadSpec w = LoadWorkloadSpec(YAML::Load(text), "workload");
    const PolicyResult r = Simulate(c, w, MakePolicy("oracle", DefaultPolicyConfig()), {});
    EXPECT_EQ(r.completed, 1);
    EXPECT_NEAR(r.gpu_mem_util_peak.at("n1"), tc.peak_util, 1e-3);
  }
}

}  // namespace
}  // namespace tidal::sim
