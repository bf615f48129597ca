// tidal simulate as a user runs it: what --help promises, options a run would
// ignore, progress of multi-run experiments.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "testing/process.h"
#include "testing/run_command.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(Simulate, HelpNamesTheDefaultPolicies) {
  const CommandResult r = RunTidal("simulate --help");
  ASSERT_EQ(r.exit_code, 0);
  // CLI11 wraps long descriptions: compare with the line breaks taken out.
  const std::string help = std::regex_replace(r.out, std::regex("\\s+"), " ");
  for (const char* want :
       {"(default k8s-default,best-fit,load-aware+stock-dp,load-aware,oracle)",
        "With --experiment fgd-inflation or philly: random, dot-prod, "
        "gpu-clustering, gpu-packing, best-fit-milli, fgd, load-aware-spread, "
        "load-aware-pack, load-aware-frag, load-aware-frag-pack (default all of these; "
        "fgd-inflation also fgd-learned"}) {
    SCOPED_TRACE(want);
    EXPECT_NE(help.find(want), std::string::npos) << help;
  }
}

// Each is refused before any file is read, naming the option and the run.
TEST(Simulate, AnOptionTheRunWouldIgnoreIsRefused) {
  struct Case {
    const char* name;
    const char* args;
    const char* want;
  };
  const Case cases[] = {
      {"--seeds without --experiment", "--seeds 42-51",
       "--seeds: used only with --experiment fgd-inflation, so without --experiment it would be "
       "ignored (the others take one --seed)"},
      {"--seed with fgd-inflation",
       "--experiment fgd-inflation --nodes n.csv --pods p.csv --seed 7",
       "--seed: used only without --experiment or with --experiment philly, so with --experiment "
       "fgd-inflation it would be ignored (fgd-inflation takes --seeds)"},
      {"--cluster with philly", "--experiment philly --jobs j.csv --cluster builtin:seed-8xA10",
       "--cluster: used only without --experiment, so with --experiment philly it would be "
       "ignored"},
      {"--policies with prediction", "--experiment prediction --genai dir --policies fgd",
       "--policies: used only without --experiment or with --experiment fgd-inflation or with "
       "--experiment philly, so with --experiment prediction it would be ignored"},
      {"--out with fgd-inflation", "--experiment fgd-inflation --nodes n.csv --pods p.csv --out d",
       "--out: used only without --experiment"},
      {"--jobs without --experiment", "--jobs j.csv", "--jobs: used only with --experiment philly"},
      {"an unknown experiment", "--experiment fgd", "--experiment: \"fgd\" (expected"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunTidal(std::string("simulate ") + tc.args, true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(tc.want), std::string::npos) << r.out;
  }
}

// Out of a terminal (a CI log), every finished run is a line of its own.
TEST(Simulate, MultiRunExperimentsPrintALinePerFinishedRun) {
  TempDir dir;
  const std::string nodes = dir.Write("nodes.csv",
                                      "sn,cpu_milli,memory_mib,gpu,model\n"
                                      "A,8000,65536,2,V100M16\n"
                                      "B,8000,65536,1,T4\n");
  const std::string pods = dir.Write("pods.csv",
                                     "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                     "p1,1000,1024,1,500,\n"
                                     "p2,1000,1024,1,1000,\n");
  const std::string jobs = dir.Write("philly.csv",
                                     "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                     "2017-10-09 06:13:03,60.0,1,60.0,vc1\n"
                                     "2017-10-09 06:14:03,120.0,2,240.0,vc1\n");
  dir.Write("philly_vc.csv", "vc,node num\nvc1,2\n");
  struct Case {
    const char* name;
    std::string args;
    std::vector<std::string> lines;  // in order
  };
  const Case cases[] = {
      {"fgd-inflation, two policies by two seeds",
       "--experiment fgd-inflation --nodes " + nodes + " --pods " + pods +
           " --seeds 1-2 --policies best-fit-milli,fgd",
       {"[1/4] best-fit-milli seed 1 done in ", "[2/4] best-fit-milli seed 2 done in ",
        "[3/4] fgd seed 1 done in ", "[4/4] fgd seed 2 done in "}},
      {"philly, two policies",
       "--experiment philly --jobs " + jobs + " --policies best-fit-milli,fgd",
       {"[1/2] best-fit-milli done in ", "[2/2] fgd done in "}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunTidal("simulate " + tc.args, true);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::vector<std::string> progress;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("[")) progress.push_back(line.substr(0, line.find(" done in ") + 9));
    EXPECT_EQ(progress, tc.lines) << r.out;
    EXPECT_EQ(r.out.find('\r'), std::string::npos) << "a \\r outside a terminal";
  }
}

// --lp-bound solves each seed's packing LP with glpsol. Whatever pods a seed
// draws, pods that accept only a model the cluster lacks leave every GPU
// unallocated, and one-GPU pods (arriving up to exactly the cluster's GPUs) on
// nodes with room to spare none.
TEST(Simulate, LpBoundReportsEachListsLowerBound) {
  TempDir dir;
  const std::string nodes = dir.Write("nodes.csv",
                                      "sn,cpu_milli,memory_mib,gpu,model\n"
                                      "A,64000,262144,2,T4\n"
                                      "B,64000,262144,2,T4\n");
  const std::string other_model = dir.Write("v100.csv",
                                            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                            "p1,1000,1024,1,1000,V100M16\n"
                                            "p2,1000,1024,2,1000,V100M16\n");
  const std::string whole = dir.Write("whole.csv",
                                      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                      "p1,1000,1024,1,1000,\n"
                                      "p2,2000,1024,1,1000,\n");
  struct Case {
    const char* name;
    std::string pods;
    const char* want;
  };
  const Case cases[] = {
      {"no node of the pods' model", other_model,
       R"("name": "LP relaxation, lower bound", "unalloc_pct_100": 100.00, "sd": 0.00)"},
      {"whole GPUs with room to spare", whole,
       R"("name": "LP relaxation, lower bound", "unalloc_pct_100": 0.00, "sd": 0.00)"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r =
        RunTidal("simulate --experiment fgd-inflation --nodes " + nodes + " --pods " + tc.pods +
                 " --seeds 1-3 --policies fgd --lp-bound --output json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(tc.want), std::string::npos) << r.out;
  }
  const CommandResult missing =
      RunBinary("env",
                std::string("PATH=/nonexistent \"") + TIDAL_BINARY +
                    "\" simulate --experiment fgd-inflation --nodes " + nodes + " --pods " + whole +
                    " --seeds 1 --policies fgd --lp-bound",
                true);
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(
      missing.out.find("--lp-bound, seed 1: glpsol not found on PATH (apt-get install glpk-utils)"),
      std::string::npos)
      << missing.out;
}

// fgd-fill plans with glpsol how the listed shares fill GPUs, then places by the
// plan; it names what it needs when glpsol is missing.
TEST(Simulate, FgdFillSolvesItsPlanWithGlpsol) {
  TempDir dir;
  const std::string nodes = dir.Write("nodes.csv",
                                      "sn,cpu_milli,memory_mib,gpu,model\n"
                                      "A,64000,262144,2,T4\n"
                                      "B,64000,262144,2,T4\n");
  const std::string pods = dir.Write("pods.csv",
                                     "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                     "p1,1000,1024,1,810,\n"
                                     "p2,1000,1024,1,160,\n");
  const std::string args = " simulate --experiment fgd-inflation --nodes " + nodes + " --pods " +
                           pods + " --seeds 1 --policies fgd-fill --output json";
  const CommandResult r = RunTidal(args.substr(1));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("name": "fgd-fill")"), std::string::npos) << r.out;
  const CommandResult missing =
      RunBinary("env", std::string("PATH=/nonexistent \"") + TIDAL_BINARY + "\"" + args, true);
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("policy fgd-fill's fill plan: glpsol not found on PATH"),
            std::string::npos)
      << missing.out;
}

}  // namespace
}  // namespace tidal
