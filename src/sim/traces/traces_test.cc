#include "tidal/sim/traces/traces.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "tidal/core/status.h"
#include "tidal/sim/traces/genai_profiles.h"

namespace tidal::sim::traces {
namespace {

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.message;
  }
  return "";
}

constexpr const char* kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
    "time,"
    "scheduled_time\n";

TEST(Openb, NodesIncludingCpuOnly) {
  const Csv csv = Csv::FromText("nodes.csv",
                                "sn,cpu_milli,memory_mib,gpu,model\n"
                                "n0,64000,262144,2,P100\n"
                                "n1,32000,131072,0,\n");
  const auto nodes = LoadOpenbNodes(csv);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "n0");
  EXPECT_EQ(nodes[0].cpu_milli, 64000);
  EXPECT_EQ(nodes[0].gpus, 2);
  EXPECT_EQ(nodes[0].model, "P100");
  EXPECT_EQ(nodes[1].gpus, 0);
  EXPECT_EQ(nodes[1].model, "");
  const ClusterSpec c = ToClusterSpec(nodes, "openb");
  EXPECT_EQ(c.nodes[0].gpu_memory, Bytes{16} << 30);
  EXPECT_EQ(c.nodes[0].memory, Bytes{262144} << 20);
  EXPECT_EQ(c.nodes[1].gpu_count, 0);
}

TEST(Openb, PodsFullAndFiveColumnLists) {
  const Csv full =
      Csv::FromText("pods.csv", std::string(kPodHeader) +
                                    "p0,12000,16384,1,460,V100M16|V100M32,LS,Running,0,100,5\n"
                                    "p1,6000,0,0,0,,BE,Pending,7,9,\n"
                                    "p2,8000,1024,8,1000,,LS,Failed,1,2,1\n");
  const auto pods = LoadOpenbPods(full);
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0].gpu_milli, 460);
  EXPECT_EQ(pods[0].gpu_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(pods[0].scheduled_s, 5);
  EXPECT_EQ(pods[1].gpus, 0);
  EXPECT_FALSE(pods[1].scheduled_s.has_value());
  EXPECT_EQ(pods[1].phase, "Pending");
  EXPECT_EQ(pods[2].TotalMilli(), 8000);

  const Csv five = Csv::FromText("multigpu.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                 "p0,12000,16384,4,1000\n");
  const auto m = LoadOpenbPods(five);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(m[0].gpu_models.empty());
  EXPECT_FALSE(m[0].creation_s.has_value());
  EXPECT_EQ(m[0].TotalMilli(), 4000);
}

TEST(Openb, MalformedRowsNameFileLineColumnAndLoadNothing) {
  struct Case {
    const char* name;
    const char* row;
    const char* want;
  };
  const Case cases[] = {
      {"bad cpu", "p0,12x,1,1,1000,,LS,Running,0,1,0",
       "pods.csv:2:4: cpu_milli: \"12x\" is not a whole number (expected milli-CPU)"},
      {"milli over 1000", "p0,1,1,1,1200,,LS,Running,0,1,0",
       "pods.csv:2:10: gpu_milli: 1200 is out of range (expected milli-GPU per GPU, 0 to 1000)"},
      {"shared multi-GPU", "p0,1,1,2,500,,LS,Running,0,1,0",
       "pods.csv:2:10: gpu_milli: 500 on a 2-GPU pod (only 1-GPU pods share a GPU; expected 1000)"},
      {"milli without GPUs", "p0,1,1,0,500,,LS,Running,0,1,0",
       "pods.csv:2:10: gpu_milli: 500 on a pod without GPUs (expected 0)"},
      {"negative time", "p0,1,1,1,1000,,LS,Running,-5,1,0",
       "pods.csv:2:27: creation_time: -5 is out of range (expected seconds from the start of the "
       "trace, 0 "
       "to 1125899906842624)"},
      {"short row", "p0,1,1,1,1000", "pods.csv:2:1: 5 fields (expected 11, one per header column)"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const Csv csv = Csv::FromText(
        "pods.csv", std::string(kPodHeader) + tc.row + "\np1,1,1,0,0,,LS,Running,0,1,0\n");
    EXPECT_EQ(ErrorOf([&] { LoadOpenbPods(csv); }), tc.want);
  }
  const Csv no_milli = Csv::FromText("pods.csv", "name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n");
  EXPECT_EQ(ErrorOf([&] { LoadOpenbPods(no_milli); }),
            "pods.csv:1:1: missing column \"gpu_milli\" (header is "
            "\"name,cpu_milli,memory_mib,num_gpu\")");
  const Csv bad_node = Csv::FromText("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,8,\n");
  EXPECT_EQ(ErrorOf([&] { LoadOpenbNodes(bad_node); }),
            "nodes.csv:2:9: model: empty (expected the GPU model of a node with GPUs)");
}

TEST(Philly, DateTimes) {
  struct Case {
    const char* text;
    bool ok;
    std::int64_t want;
  };
  const Case cases[] = {
      {"1970-01-01 00:00:00", true, 0},
      {"2017-10-09 07:01:55", true, 1507532515},
      {"2016-02-29 00:00:00", true, 1456704000},
      {"2017-02-29 00:00:00", false, 0},
      {"2017-13-01 00:00:00", false, 0},
      {"2017-10-09T07:01:55", false, 0},
      {"2017-10-09 07:01", false, 0},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.text);
    std::int64_t s = -1;
    EXPECT_EQ(ParseDateTime(tc.text, &s), tc.ok);
    if (tc.ok) {
      EXPECT_EQ(s, tc.want);
    }
  }
}

TEST(Philly, JobsAreSortedBySubmitTimeAndTheTrailingEmptyLineIsSkipped) {
  const Csv csv = Csv::FromText("philly.csv",
                                "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                "2017-10-09 06:13:03,2951.0,8,23608.0,6214e9\n"
                                "2017-10-09 06:13:03,5.0,2,10.0,6214e9\n"
                                "\n");
  const auto jobs = LoadPhillyJobs(csv);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].line, 3);  // earliest first, file order on ties
  EXPECT_EQ(jobs[1].line, 4);
  EXPECT_EQ(jobs[2].line, 2);
  EXPECT_EQ(jobs[2].submit_s - jobs[0].submit_s, 48 * 60 + 52);
  EXPECT_EQ(jobs[0].gpus, 8);
  EXPECT_DOUBLE_EQ(jobs[0].duration_s, 2951);
  EXPECT_EQ(jobs[2].vc, "11cb48");

  const Csv bad = Csv::FromText("philly.csv",
                                "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                "2017-10-09 7:01:55,66.0,0,66.0,11cb48\n");
  EXPECT_EQ(ErrorOf([&] { LoadPhillyJobs(bad); }),
            "philly.csv:2:1: timestamp: \"2017-10-09 7:01:55\" is not a time (expected YYYY-MM-DD "
            "HH:MM:SS)\n"
            "philly.csv:2:25: num_gpus: 0 is out of range (expected a GPU count, 1 to 4096)");

  const Csv vcs = Csv::FromText("philly_vc.csv", "vc,node num\n6214e9,64\n7f04ca,32\n");
  const auto v = LoadPhillyVcs(vcs);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].name, "7f04ca");
  EXPECT_EQ(v[0].nodes, 64);
}

TEST(Genai, JoinsTheTwoSeriesWhoseColumnOrdersDiffer) {
  const Csv mem = Csv::FromText("mem.csv",
                                "timestamp_anon,value,container_ip\n"
                                "120.0,300.0,b\n"
                                "60.0,100.0,a\n"
                                "0.0,200.0,a\n");
  const Csv duty = Csv::FromText("duty.csv",
                                 "value,timestamp_anon,container_ip\n"
                                 "50.0,60.0,a\n"
                                 "0.0,0.0,a\n");
  const auto pods = LoadGenaiUsage(mem, duty);
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].pod, "b");  // order of first appearance in the memory file
  EXPECT_TRUE(pods[0].duty.empty());
  ASSERT_EQ(pods[1].memory.size(), 2u);
  EXPECT_DOUBLE_EQ(pods[1].memory[0].t_s, 0);  // sorted by time
  EXPECT_DOUBLE_EQ(pods[1].memory[0].value, 200);
  ASSERT_EQ(pods[1].duty.size(), 2u);
  EXPECT_DOUBLE_EQ(pods[1].duty[1].value, 50);

  const Csv bad = Csv::FromText("duty.csv", "value,timestamp_anon,container_ip\n150.0,0.0,a\n");
  EXPECT_EQ(ErrorOf([&] { LoadGenaiUsage(mem, bad); }),
            "duty.csv:2:1: value: 150 is out of range (expected percent of GPU time, 0 to 100)");
}

TEST(Dlrm, InstancesWithMissingTimes) {
  const std::string header =
      "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_"
      "limit,"
      "memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,"
      "scheduled_time,deletion_time\n";
  const Csv csv = Csv::FromText(
      "dlrm.csv", header +
                      "i0,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,,,\n"
                      "i1,CN,app_1,48,48,0,0,10,10,40.0,40.0,100.0,200.0,-1,5.0,6.0,nan\n");
  const auto d = LoadDlrm(csv);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d[0].gpu_node);
  EXPECT_EQ(d[0].gpus, 1);
  EXPECT_EQ(d[0].rdma_pct, 25);
  EXPECT_EQ(d[0].max_per_node, 8);
  EXPECT_FALSE(d[0].creation_s.has_value());
  EXPECT_FALSE(d[1].gpu_node);
  EXPECT_EQ(d[1].creation_s, 5.0);
  EXPECT_FALSE(d[1].deletion_s.has_value());
  EXPECT_EQ(d[1].max_per_node, -1);
  const Csv bad =
      Csv::FromText("dlrm.csv", header + "i0,XN,app_0,12,12,1,1,25,25,120,120,640,800,0,,,\n");
  EXPECT_EQ(ErrorOf([&] { LoadDlrm(bad); }),
            "dlrm.csv:2:4: role: \"XN\" (expected HN or CN)\n"
            "dlrm.csv:2:45: max_instance_per_node: 0 (expected a positive limit or -1 for none)");
}

TEST(Shapes, PaiAndSpotNodeLists) {
  const Csv pai = Csv::FromText("pai.csv",
                                "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n"
                                "m0,CPU,96,512,0\n"
                                "m1,V100M32,96,384,8\n"
                                "m2,MISC,96,512,8\n");
  const auto p = LoadPaiMachines(pai);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].gpu_model, "");
  EXPECT_EQ(p[1].cpu_milli, 96000);
  EXPECT_EQ(p[1].memory_mib, 384 * 1024);
  const ClusterSpec pc = ToClusterSpec(p, "pai", Bytes{12} << 30);
  EXPECT_EQ(pc.nodes[1].gpu_memory, Bytes{32} << 30);
  EXPECT_EQ(pc.nodes[2].gpu_memory, Bytes{12} << 30);  // undisclosed model
  EXPECT_EQ(pc.nodes[0].gpu_count, 0);

  const Csv spot = Csv::FromText("spot.csv",
                                 "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
                                 "A10,1,128,2\n"
                                 "A100-SXM4-80GB,8,128,3\n");
  const auto s = LoadSpotNodes(spot);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "spot-2");
  EXPECT_FALSE(s[0].memory_mib.has_value());
  const ClusterSpec sc = ToClusterSpec(s, "spot");
  EXPECT_EQ(sc.nodes[1].gpu_memory, Bytes{80} << 30);
  EXPECT_EQ(sc.nodes[1].links.size(), 8u);

  const Csv bad =
      Csv::FromText("pai.csv", "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm0,CPU,96,512,2\n");
  EXPECT_EQ(ErrorOf([&] { LoadPaiMachines(bad); }),
            "pai.csv:2:15: cap_gpu: 2 GPUs on a CPU machine (expected 0)");
}

TEST(FgdExpectedSummary, Rows) {
  const Csv csv =
      Csv::FromText("fgd_summary.csv",
                    "workload,sc_policy,arrived_pct,n_seeds,alloc_pct_mean,alloc_pct_sd,alloc_pct_"
                    "median,unalloc_pct_mean,"
                    "frag_amount_pct_mean,frag_ratio_pct_mean\n"
                    "openb_pod_list_default,06-FGD,100,10,95.23,0.11,95.2,4.77,3.1,60.2\n");
  const auto rows = LoadFgdSummary(csv);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].policy, "06-FGD");
  EXPECT_EQ(rows[0].arrived_pct, 100);
  EXPECT_DOUBLE_EQ(rows[0].unalloc_pct_mean, 4.77);
}

// Whole trace files load with the row counts their READMEs give: the openb files
// committed under testdata/traces always; with TIDAL_TRACES_DIR pointing at the
// full set (not in the repository), every other trace as well.
TEST(RealTraces, EveryFileLoads) {
  const std::string fixtures = std::string(TIDAL_TESTDATA_DIR) + "/traces/";
  auto fixture = [&](const std::string& rel) { return Csv::ReadFile(fixtures + rel); };
  EXPECT_EQ(LoadOpenbNodes(fixture("openb/openb_node_list_gpu_node.csv")).size(), 1213u);
  EXPECT_EQ(LoadOpenbPods(fixture("openb/openb_pod_list_default.csv")).size(), 8152u);
  EXPECT_EQ(LoadFgdSummary(fixture("openb/fgd_expected/fgd_summary.csv")).size(), 264u);

  const char* dir = std::getenv("TIDAL_TRACES_DIR");
  if (!dir || !*dir) return;  // the committed files above are all there is
  const std::string d(dir);
  auto csv = [&](const std::string& rel) { return Csv::ReadFile(d + "/" + rel); };
  EXPECT_EQ(LoadOpenbNodes(csv("openb/openb_node_list_all_node.csv")).size(), 1523u);
  EXPECT_EQ(LoadOpenbPods(csv("openb/openb_pod_list_gpushare100.csv")).size(), 8152u);
  EXPECT_EQ(LoadOpenbPods(csv("openb/openb_pod_list_gpuspec33.csv")).size(), 8152u);
  EXPECT_EQ(LoadOpenbPods(csv("openb/openb_pod_list_multigpu50.csv")).size(), 9061u);
  EXPECT_EQ(LoadPhillyJobs(csv("philly/philly.csv")).size(), 82247u);
  EXPECT_EQ(LoadPhillyVcs(csv("philly/philly_vc.csv")).size(), 11u);
  const auto genai = LoadGenaiUsage(csv("alibaba_genai_2026/pod_gpu_memory_used_bytes_anon.csv"),
                                    csv("alibaba_genai_2026/pod_gpu_duty_cycle_anon.csv"));
  EXPECT_EQ(genai.size(), 144u);
  // The committed seed-genai profiles are what `tidal traces genai-profiles` derives.
  const auto derived = DeriveMemoryProfiles(genai);
  const auto committed = LoadMemoryProfiles(
      YAML::LoadFile(std::string(TIDAL_SOURCE_DIR) + "/examples/workloads/genai-profiles.yaml"),
      "genai-profiles.yaml");
  ASSERT_EQ(derived.size(), committed.size());
  for (std::size_t i = 0; i < derived.size(); ++i) {
    SCOPED_TRACE(derived[i].name);
    EXPECT_EQ(derived[i].name, committed[i].name);
    EXPECT_EQ(derived[i].share, committed[i].share);
  }
  EXPECT_EQ(LoadDlrm(csv("alibaba_dlrm_2025/disaggregated_DLRM_trace.csv")).size(), 23871u);
  EXPECT_EQ(LoadPaiMachines(csv("alibaba_pai_2020/pai_machine_spec.csv")).size(), 1897u);
  EXPECT_EQ(LoadSpotNodes(csv("alibaba_spot_2026/node_info_df.csv")).size(), 4278u);
}

}  // namespace
}  // namespace tidal::sim::traces
