#include "tidal/kubetypes/pod.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tidal/kubetypes/pod_yaml.h"

namespace tidal {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;

constexpr const char* kFullPodJson = R"({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "train-7",
    "namespace": "ml",
    "uid": "0b5c-11",
    "labels": {"app": "trainer", "tier": "gpu"},
    "annotations": {"ai.gpu-memory": "20Gi", "ai.model-size": "7Gi",
                    "ai.gpu-reject-threshold": "0.80", "ai.nvlink-required": "true"}
  },
  "spec": {
    "nodeName": "gpu-node-3",
    "initContainers": [
      {"name": "fetch", "image": "busybox:1.36",
       "resources": {"limits": {"cpu": "2", "memory": "512Mi"}}}
    ],
    "containers": [
      {"name": "main", "image": "pytorch/pytorch:2.1",
       "env": [{"name": "AI_LOAD_TYPE", "value": "GPU_HEAVY"},
               {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
               {"name": "EMPTY"}],
       "resources": {"requests": {"cpu": "500m", "memory": "16Gi", "nvidia.com/gpu": "2"},
                     "limits": {"memory": "32Gi", "nvidia.com/gpu": "2"}}},
      {"name": "sidecar", "image": "fluentd:v1", "resources": {"requests": {"cpu": 0.25}}}
    ]
  },
  "status": {"phase": "Pending"}
})";

constexpr const char* kFullPodYaml = R"(
apiVersion: v1
kind: Pod
metadata:
  name: train-7
  namespace: ml
  uid: 0b5c-11
  labels: {app: trainer, tier: gpu}
  annotations:
    ai.gpu-memory: 20Gi
    ai.model-size: 7Gi
    ai.gpu-reject-threshold: "0.80"
    ai.nvlink-required: "true"
spec:
  nodeName: gpu-node-3
  initContainers:
  - name: fetch
    image: busybox:1.36
    resources:
      limits: {cpu: "2", memory: 512Mi}
  containers:
  - name: main
    image: pytorch/pytorch:2.1
    env:
    - name: AI_LOAD_TYPE
      value: GPU_HEAVY
    - name: POD_IP
      valueFrom:
        fieldRef: {fieldPath: status.podIP}
    - name: EMPTY
    resources:
      requests: {cpu: 500m, memory: 16Gi, nvidia.com/gpu: 2}
      limits: {memory: 32Gi, nvidia.com/gpu: 2}
  - name: sidecar
    image: fluentd:v1
    resources:
      requests: {cpu: 0.25}
status:
  phase: Pending
)";

void ExpectFullPod(const RawPod& pod) {
  EXPECT_EQ(pod.name, "train-7");
  EXPECT_EQ(pod.namespace_name, "ml");
  EXPECT_EQ(pod.uid, "0b5c-11");
  EXPECT_EQ(pod.node_name, "gpu-node-3");
  EXPECT_EQ(pod.phase, "Pending");
  EXPECT_EQ(pod.labels, (Labels{{"app", "trainer"}, {"tier", "gpu"}}));
  EXPECT_EQ(pod.annotations.size(), 4u);
  EXPECT_EQ(pod.annotations.at("ai.gpu-reject-threshold"), "0.80");
  ASSERT_EQ(pod.init_containers.size(), 1u);
  EXPECT_EQ(pod.init_containers[0].name, "fetch");
  EXPECT_EQ(pod.init_containers[0].limits.at("cpu"), "2");
  ASSERT_EQ(pod.containers.size(), 2u);
  const RawContainer& main = pod.containers[0];
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.image, "pytorch/pytorch:2.1");
  // valueFrom entries are skipped; an entry without value is the empty string.
  EXPECT_EQ(main.env,
            (std::map<std::string, std::string>{{"AI_LOAD_TYPE", "GPU_HEAVY"}, {"EMPTY", ""}}));
  EXPECT_EQ(main.requests.at("nvidia.com/gpu"), "2");
  EXPECT_EQ(main.limits.at("memory"), "32Gi");
  EXPECT_EQ(pod.containers[1].requests.at("cpu"), "0.25");  // a number, kept as its text
}

void ExpectFullDemand(const PodDemand& d) {
  EXPECT_EQ(d.invalid_reason, "");
  EXPECT_EQ(d.Key(), "ml/train-7");
  EXPECT_EQ(d.uid, "0b5c-11");
  EXPECT_EQ(d.gpu_count, 2);
  EXPECT_EQ(d.cpu_milli, 2000);  // max(500 + 250, init 2000)
  EXPECT_EQ(d.memory_request, 16 * kGi);
  EXPECT_TRUE(d.gpu_memory_declared);
  EXPECT_EQ(d.gpu_memory_per_gpu, 20 * kGi);
  EXPECT_EQ(d.model_size, 7 * kGi);
  ASSERT_TRUE(d.gpu_reject_threshold.has_value());
  EXPECT_DOUBLE_EQ(*d.gpu_reject_threshold, 0.80);
  EXPECT_TRUE(d.nvlink_required);
  EXPECT_FALSE(d.nvlink_auto);
  EXPECT_EQ(d.load_type, LoadType::kGpuHeavy);
  EXPECT_EQ(d.images, (std::vector<std::string>{"pytorch/pytorch:2.1", "fluentd:v1"}));
  EXPECT_EQ(d.labels.at("app"), "trainer");
}

TEST(DecodePod, FullJson) {
  RawPod pod;
  Status s = DecodePodJson(kFullPodJson, &pod);
  ASSERT_TRUE(s.ok()) << s.reason();
  ExpectFullPod(pod);
  ExpectFullDemand(ToPodDemand(pod));
}

TEST(DecodePod, FullYaml) {
  RawPod pod;
  Status s = DecodePodYaml(kFullPodYaml, &pod);
  ASSERT_TRUE(s.ok()) << s.reason();
  ExpectFullPod(pod);
  ExpectFullDemand(ToPodDemand(pod));
}

TEST(DecodePod, TextDispatchesOnFirstCharacter) {
  for (std::string text : {std::string(" \n\t") + kFullPodJson, std::string(kFullPodYaml),
                           "\xEF\xBB\xBF" + std::string(kFullPodJson)}) {
    RawPod pod;
    Status s = DecodePodText(text, &pod);
    ASSERT_TRUE(s.ok()) << s.reason();
    ExpectFullPod(pod);
  }
  // A JSON error message proves the JSON decoder was chosen.
  RawPod pod;
  Status s = DecodePodText("  {\"metadata\": ", &pod);
  EXPECT_EQ(s.reason().rfind("invalid JSON: ", 0), 0u) << s.reason();
}

TEST(DecodePod, NullIsAbsent) {
  const char* json = R"({"metadata": {"name": "p", "namespace": null, "uid": null,
      "labels": null, "annotations": {"a": null}},
    "spec": {"nodeName": null, "initContainers": null,
      "containers": [{"name": "c", "image": null, "env": null, "resources": null},
                     {"name": "d", "resources": {"requests": null, "limits": {"cpu": null}}},
                     {"name": "e", "env": [{"name": "X", "value": null}]}]},
    "status": null})";
  RawPod pod;
  Status s = DecodePodJson(json, &pod);
  ASSERT_TRUE(s.ok()) << s.reason();
  EXPECT_EQ(pod.namespace_name, "default");
  EXPECT_TRUE(pod.annotations.empty());
  ASSERT_EQ(pod.containers.size(), 3u);
  EXPECT_TRUE(pod.containers[1].limits.empty());
  EXPECT_EQ(pod.containers[2].env.at("X"), "");

  const char* yaml = R"(
metadata: {name: p, namespace: ~, labels: , annotations: {a: null}}
spec:
  containers:
  - name: c
    image:
    resources: {limits: ~}
status:
)";
  s = DecodePodYaml(yaml, &pod);
  ASSERT_TRUE(s.ok()) << s.reason();
  EXPECT_EQ(pod.namespace_name, "default");
  EXPECT_TRUE(pod.annotations.empty());
  ASSERT_EQ(pod.containers.size(), 1u);
  EXPECT_EQ(ToPodDemand(pod).invalid_reason, "");
}

TEST(DecodePod, EmptyNamespaceIsDefault) {
  RawPod pod;
  ASSERT_TRUE(DecodePodJson(R"({"metadata": {"name": "p", "namespace": ""}})", &pod).ok());
  EXPECT_EQ(ToPodDemand(pod).Key(), "default/p");
}

// Brace matching that skips strings: enough to cut one member out of a JSON file.
std::string ExtractObject(const std::string& json, const std::string& key) {
  std::size_t pos = json.find("\"" + key + "\"");
  if (pos == std::string::npos) return "";
  pos = json.find('{', pos);
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = pos; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return json.substr(pos, i - pos + 1);
    }
  }
  return "";
}

TEST(DecodePod, ReferenceExtenderArgsPod) {
  std::ifstream in(std::string(TIDAL_TESTDATA_DIR) + "/reference/extender/ExtenderArgs.json");
  ASSERT_TRUE(in) << "missing testdata";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string pod_json = ExtractObject(buffer.str(), "Pod");
  ASSERT_NE(pod_json, "");
  RawPod pod;
  Status s = DecodePodJson(pod_json, &pod);
  ASSERT_TRUE(s.ok()) << s.reason();
  EXPECT_EQ(pod.name, "podname");
  EXPECT_TRUE(pod.containers.empty());  // "containers": null
  const PodDemand d = ToPodDemand(pod);
  EXPECT_EQ(d.invalid_reason, "");
  EXPECT_EQ(d.gpu_count, 0);
  EXPECT_EQ(d.Key(), "default/podname");
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* error;  // expected part of the reason
};

// What kube-scheduler's queue orders pending pods by, and the pods it skips.
TEST(DecodePod, QueueFields) {
  struct Case {
    std::string name, json;
    std::string scheduler_name;
    std::int64_t priority;
    std::string created;
    bool unschedulable;
  };
  const Case cases[] = {
      {"none_given", R"({"metadata": {"name": "p"}})", "", 0, "", false},
      {"all_given",
       R"({"metadata": {"name": "p", "creationTimestamp": "2026-12-06T10:00:00Z"},
           "spec": {"schedulerName": "load-aware-scheduler", "priority": -5},
           "status": {"phase": "Pending", "conditions": [
             {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})",
       "load-aware-scheduler", -5, "2026-12-06T10:00:00Z", true},
      {"scheduled_condition_true",
       R"({"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}})", "", 0, "",
       false},
      {"other_condition_unschedulable",
       R"({"status": {"conditions": [{"type": "Ready", "status": "False",
                                      "reason": "Unschedulable"}]}})",
       "", 0, "", false},
      {"priority_large", R"({"spec": {"priority": 2000001000}})", "", 2000001000, "", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RawPod pod;
    ASSERT_TRUE(DecodePodJson(c.json, &pod).ok());
    EXPECT_EQ(pod.scheduler_name, c.scheduler_name);
    EXPECT_EQ(pod.priority, c.priority);
    EXPECT_EQ(pod.created, c.created);
    EXPECT_EQ(pod.unschedulable, c.unschedulable);
  }
  RawPod yaml;
  ASSERT_TRUE(DecodePodYaml("spec: {priority: 7}\n", &yaml).ok());
  EXPECT_EQ(yaml.priority, 7);
}

TEST(DecodePod, Errors) {
  const ErrorCase cases[] = {
      {"json_empty", "", "invalid JSON: "},
      {"json_truncated", R"({"metadata": {"name": "p")", "invalid JSON: "},
      {"json_bad_value", R"({"metadata": })", "invalid JSON: "},
      {"json_trailing", R"({} x)", "invalid JSON: "},
      {"json_root_array", R"([{"metadata": {}}])", "pod: expected an object"},
      {"json_kind_deployment", R"({"kind": "Deployment", "spec": {}})", "kind: expected Pod"},
      {"json_metadata_string", R"({"metadata": "p"})", "metadata: expected an object"},
      {"json_name_number", R"({"metadata": {"name": 5}})", "metadata.name: expected a string"},
      {"json_annotations_array", R"({"metadata": {"annotations": ["a"]}})",
       "metadata.annotations: expected an object"},
      {"json_label_number", R"({"metadata": {"labels": {"app": 1}}})",
       R"(metadata.labels["app"]: expected a string)"},
      {"json_spec_array", R"({"spec": []})", "spec: expected an object"},
      {"json_containers_object", R"({"spec": {"containers": {}}})",
       "spec.containers: expected an array"},
      {"json_container_string", R"({"spec": {"containers": [{"name": "a"}, "b"]}})",
       "spec.containers[1]: expected an object"},
      {"json_container_null", R"({"spec": {"containers": [null]}})",
       "spec.containers[0]: expected an object"},
      {"json_init_container_string", R"({"spec": {"initContainers": ["b"]}})",
       "spec.initContainers[0]: expected an object"},
      {"json_limits_array",
       R"({"spec": {"containers": [{}, {"resources": {"limits": ["nvidia.com/gpu"]}}]}})",
       "spec.containers[1].resources.limits: expected an object"},
      {"json_resources_string", R"({"spec": {"containers": [{"resources": "big"}]}})",
       "spec.containers[0].resources: expected an object"},
      {"json_limit_bool", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": true}}}]}})",
       R"(spec.containers[0].resources.limits["nvidia.com/gpu"]: expected a string or a number)"},
      {"json_image_object", R"({"spec": {"containers": [{"image": {}}]}})",
       "spec.containers[0].image: expected a string"},
      {"json_env_object", R"({"spec": {"containers": [{"env": {"A": "1"}}]}})",
       "spec.containers[0].env: expected an array"},
      {"json_env_entry_string", R"({"spec": {"containers": [{"env": ["A=1"]}]}})",
       "spec.containers[0].env[0]: expected an object"},
      {"json_env_no_name", R"({"spec": {"containers": [{"env": [{"value": "1"}]}]}})",
       "spec.containers[0].env[0].name: expected a non-empty string"},
      {"json_env_value_number", R"({"spec": {"containers": [{"env": [{"name": "A",
          "value": 1}]}]}})",
       "spec.containers[0].env[0].value: expected a string"},
      {"json_status_string", R"({"status": "Running"})", "status: expected an object"},
      {"json_phase_number", R"({"status": {"phase": 1}})", "status.phase: expected a string"},
      {"json_priority_word", R"({"spec": {"priority": "high"}})",
       "spec.priority: expected an integer"},
      {"json_priority_fraction", R"({"spec": {"priority": 1.5}})",
       "spec.priority: expected an integer"},
      {"json_scheduler_name_number", R"({"spec": {"schedulerName": 1}})",
       "spec.schedulerName: expected a string"},
      {"json_conditions_object", R"({"status": {"conditions": {}}})",
       "status.conditions: expected an array"},
      {"json_condition_string", R"({"status": {"conditions": ["PodScheduled"]}})",
       "status.conditions[0]: expected an object"},
      {"yaml_invalid", "metadata: [1, 2\n", "invalid YAML: "},
      {"yaml_bad_indent", "metadata:\n  name: a\n bad: b\n", "invalid YAML: "},
      {"yaml_empty", "", "pod: the YAML document is empty"},
      {"yaml_scalar_root", "just a string\n", "pod: expected an object"},
      {"yaml_sequence_root", "- a\n- b\n", "pod: expected an object"},
      {"yaml_two_documents", "metadata: {name: a}\n---\nmetadata: {name: b}\n",
       "expected one YAML document, found several"},
      {"yaml_leading_empty_documents", "---\n---\nkind: Job\n", "kind: expected Pod"},
      // yaml-cpp 0.7's LoadAll never returns on these (jbeder/yaml-cpp#1040).
      {"yaml_lone_comma", ",", "invalid YAML: "},
      {"yaml_leading_comma", ",apiVersion: v1\nkind: Pod\n", "invalid YAML: "},
      {"yaml_trailing_comma", "kind: Pod\n,\n", "invalid YAML: "},
      {"yaml_annotations_list", "metadata:\n  annotations:\n  - a\n",
       "metadata.annotations: expected an object"},
      {"yaml_container_string", "spec:\n  containers:\n  - {name: a}\n  - b\n",
       "spec.containers[1]: expected an object"},
      {"yaml_limits_list", "spec:\n  containers:\n  - {}\n  - resources: {limits: [a]}\n",
       "spec.containers[1].resources.limits: expected an object"},
      {"yaml_label_map", "metadata: {labels: {app: {x: 1}}}\n",
       R"(metadata.labels["app"]: expected a string)"},
      {"yaml_complex_key", "metadata:\n  labels:\n    ? [a, b]\n    : c\n",
       "metadata.labels: a key is not a string"},
      {"yaml_kind_job", "kind: Job\n", "kind: expected Pod"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    RawPod pod;
    pod.name = "stale";
    const std::string_view name = c.name;
    Status s =
        name.substr(0, 5) == "yaml_" ? DecodePodYaml(c.text, &pod) : DecodePodJson(c.text, &pod);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Code::kError);
    EXPECT_NE(s.reason().find(c.error), std::string::npos) << s.reason();
    EXPECT_EQ(pod.name, "");  // no half-decoded pod left behind
  }
}

struct DemandCase {
  const char* name;
  const char* text;     // JSON or YAML
  int gpus;             // expected when valid
  const char* invalid;  // expected part of invalid_reason; "" when valid
};

TEST(ToPodDemand, GpuCount) {
  const DemandCase cases[] = {
      {"no_spec", R"({"metadata": {"name": "p"}})", 0, ""},
      {"containers_null", R"({"spec": {"containers": null}})", 0, ""},
      {"no_resources", R"({"spec": {"containers": [{"name": "a"}]}})", 0, ""},
      {"limits",
       R"({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}}]}})", 2, ""},
      {"requests_only",
       R"({"spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]}})", 1,
       ""},
      {"limits_win_over_requests", R"({"spec": {"containers": [{"resources": {
          "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "4"}}}]}})",
       4, ""},
      {"json_number",
       R"({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 3}}}]}})", 3, ""},
      {"json_number_double", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": 2.0}}}]}})",
       2, ""},
      {"milli_whole", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": "2000m"}}}]}})",
       2, ""},
      {"sum_over_containers", R"({"spec": {"containers": [
          {"resources": {"limits": {"nvidia.com/gpu": "1"}}},
          {"resources": {"requests": {"nvidia.com/gpu": "2"}}},
          {"resources": {"limits": {"cpu": "1"}}}]}})",
       3, ""},
      {"init_container_larger", R"({"spec": {
          "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}}],
          "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}},
                         {"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})",
       4, ""},
      {"init_container_smaller", R"({"spec": {
          "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}},
                             {"resources": {"limits": {"nvidia.com/gpu": "2"}}}],
          "containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}},
                         {"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})",
       3, ""},
      {"yaml_number", "spec:\n  containers:\n  - resources: {limits: {nvidia.com/gpu: 2}}\n", 2,
       ""},
      {"yaml_init", "spec:\n  initContainers:\n  - resources: {requests: {nvidia.com/gpu: 8}}\n", 8,
       ""},
      {"fractional", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": "0.5"}}}]}})",
       0,
       R"(spec.containers[0].resources.limits["nvidia.com/gpu"]: "0.5" is not a non-negative )"
       R"(whole number of GPUs)"},
      {"almost_one", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": "0.99999999999"}}}]}})",
       0, "is not a non-negative whole number of GPUs"},
      {"milli_fraction", R"({"spec": {"containers": [{"resources": {"requests":
          {"nvidia.com/gpu": "1500m"}}}]}})",
       0, R"(spec.containers[0].resources.requests["nvidia.com/gpu"]: "1500m")"},
      {"negative", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": "-1"}}}]}})",
       0, "\"-1\" is not a non-negative whole number of GPUs"},
      {"malformed", R"({"spec": {"containers": [{}, {"resources": {"limits":
          {"nvidia.com/gpu": "abc"}}}]}})",
       0, R"(spec.containers[1].resources.limits["nvidia.com/gpu"]: "abc" is not a quantity)"},
      {"malformed_init", R"({"spec": {"initContainers": [{"resources": {"limits":
          {"nvidia.com/gpu": "2x"}}}]}})",
       0, R"(spec.initContainers[0].resources.limits["nvidia.com/gpu"]: "2x")"},
      {"overflow", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": "1e30"}}}]}})",
       0, "too large"},
      {"int_overflow", R"({"spec": {"containers": [{"resources": {"limits":
          {"nvidia.com/gpu": "3e9"}}}]}})",
       0, "nvidia.com/gpu total 3000000000 is too large"},
  };
  for (const DemandCase& c : cases) {
    SCOPED_TRACE(c.name);
    RawPod pod;
    Status s = DecodePodText(c.text, &pod);
    ASSERT_TRUE(s.ok()) << s.reason();
    const PodDemand d = ToPodDemand(pod);
    if (*c.invalid == '\0') {
      EXPECT_EQ(d.invalid_reason, "");
      EXPECT_EQ(d.gpu_count, c.gpus);
    } else {
      EXPECT_NE(d.invalid_reason.find(c.invalid), std::string::npos) << d.invalid_reason;
    }
  }
}

TEST(ToPodDemand, CpuAndMemory) {
  const char* json = R"({"spec": {
      "initContainers": [{"resources": {"requests": {"cpu": "1", "memory": "8Gi"}}}],
      "containers": [
        {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
        {"resources": {"limits": {"cpu": "1.5", "memory": "2Gi"}}},
        {"resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "4"}}}]}})";
  RawPod pod;
  ASSERT_TRUE(DecodePodJson(json, &pod).ok());
  PodDemand d = ToPodDemand(pod);
  EXPECT_EQ(d.invalid_reason, "");
  EXPECT_EQ(d.cpu_milli, 1850);          // 250 + 1500 (limit as request) + 100 > init 1000
  EXPECT_EQ(d.memory_request, 8 * kGi);  // init 8Gi > 1Gi + 2Gi

  ASSERT_TRUE(DecodePodJson(R"({"spec": {"containers": [{"resources": {"requests":
      {"memory": "-1Gi"}}}]}})",
                            &pod)
                  .ok());
  EXPECT_NE(ToPodDemand(pod).invalid_reason.find(
                R"(spec.containers[0].resources.requests["memory"]: "-1Gi" is negative)"),
            std::string::npos);
  ASSERT_TRUE(DecodePodJson(R"({"spec": {"containers": [{"resources": {"limits":
      {"cpu": "lots"}}}]}})",
                            &pod)
                  .ok());
  EXPECT_NE(ToPodDemand(pod).invalid_reason.find(
                R"(spec.containers[0].resources.limits["cpu"]: "lots" is not a quantity)"),
            std::string::npos);
}

// A pod with one annotation (JSON-escaped by the caller where needed).
std::string PodWithAnnotation(const std::string& key, const std::string& value) {
  return R"({"metadata": {"name": "p", "annotations": {")" + key + R"(": ")" + value +
         R"("}}, "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})";
}

struct AnnotationCase {
  const char* name;
  const char* key;
  const char* value;
  const char* invalid;  // expected part of invalid_reason; "" when valid
};

TEST(ToPodDemand, Annotations) {
  const AnnotationCase cases[] = {
      {"threshold_valid", "ai.gpu-reject-threshold", "0.80", ""},
      {"threshold_nan", "ai.gpu-reject-threshold", "NaN",
       R"(annotation ai.gpu-reject-threshold: "NaN" is not a number in [0, 1] )"
       R"((expected e.g. "0.80"))"},
      {"threshold_exponent", "ai.gpu-reject-threshold", "1e9",
       R"(annotation ai.gpu-reject-threshold: "1e9" is not a number in [0, 1])"},
      {"threshold_empty", "ai.gpu-reject-threshold", "",
       R"(annotation ai.gpu-reject-threshold: "" is not a number in [0, 1])"},
      {"threshold_negative", "ai.gpu-reject-threshold", "-0.1",
       R"(annotation ai.gpu-reject-threshold: "-0.1" is not a number)"},
      {"threshold_trailing_space", "ai.gpu-reject-threshold", "0.8 ",
       R"(annotation ai.gpu-reject-threshold: "0.8 " is not a number in [0, 1])"},
      {"gpu_memory_valid", "ai.gpu-memory", "24Gi", ""},
      {"gpu_memory_zero", "ai.gpu-memory", "0",
       R"(annotation ai.gpu-memory: "0" must be positive)"},
      {"gpu_memory_negative", "ai.gpu-memory", "-1Gi", "annotation ai.gpu-memory: \"-1Gi\""},
      {"gpu_memory_malformed", "ai.gpu-memory", "20GB",
       R"(annotation ai.gpu-memory: "20GB" is not a quantity)"},
      {"gpu_memory_empty", "ai.gpu-memory", "",
       R"(annotation ai.gpu-memory: "" is not a quantity)"},
      {"model_size_valid", "ai.model-size", "13.5Gi", ""},
      {"model_size_zero", "ai.model-size", "0", ""},
      {"model_size_negative", "ai.model-size", "-5",
       R"(annotation ai.model-size: "-5" must be non-negative)"},
      {"model_size_malformed", "ai.model-size", "big",
       R"(annotation ai.model-size: "big" is not a quantity)"},
      {"nvlink_true_upper", "ai.nvlink-required", "TRUE", ""},
      {"nvlink_false", "ai.nvlink-required", "False", ""},
      {"nvlink_yes", "ai.nvlink-required", "yes",
       R"(annotation ai.nvlink-required: "yes" is not a boolean (expected "true" or "false"))"},
      {"nvlink_one", "ai.nvlink-required", "1", "annotation ai.nvlink-required: \"1\""},
      {"auto_true", "ai.auto-nvlink", "True", ""},
      {"auto_empty", "ai.auto-nvlink", "", R"(annotation ai.auto-nvlink: "" is not a boolean)"},
      {"unrelated", "example.com/other", "anything", ""},
  };
  for (const AnnotationCase& c : cases) {
    SCOPED_TRACE(c.name);
    RawPod pod;
    Status s = DecodePodJson(PodWithAnnotation(c.key, c.value), &pod);
    ASSERT_TRUE(s.ok()) << s.reason();
    const PodDemand d = ToPodDemand(pod);
    if (*c.invalid == '\0') {
      EXPECT_EQ(d.invalid_reason, "");
    } else {
      EXPECT_NE(d.invalid_reason.find(c.invalid), std::string::npos) << d.invalid_reason;
      EXPECT_FALSE(d.gpu_reject_threshold.has_value());  // a bad value never loosens anything
    }
    EXPECT_EQ(d.gpu_count, 1);
  }
}

TEST(ToPodDemand, AnnotationValues) {
  RawPod pod;
  ASSERT_TRUE(DecodePodJson(PodWithAnnotation("ai.gpu-memory", "24Gi"), &pod).ok());
  PodDemand d = ToPodDemand(pod);
  EXPECT_TRUE(d.gpu_memory_declared);
  EXPECT_EQ(d.gpu_memory_per_gpu, 24 * kGi);

  ASSERT_TRUE(DecodePodJson(PodWithAnnotation("ai.model-size", "13.5Gi"), &pod).ok());
  EXPECT_EQ(ToPodDemand(pod).model_size, 27 * kGi / 2);
  EXPECT_FALSE(ToPodDemand(pod).gpu_memory_declared);

  ASSERT_TRUE(DecodePodJson(PodWithAnnotation("ai.nvlink-required", "TRUE"), &pod).ok());
  EXPECT_TRUE(ToPodDemand(pod).nvlink_required);
  ASSERT_TRUE(DecodePodJson(PodWithAnnotation("ai.nvlink-required", "false"), &pod).ok());
  EXPECT_FALSE(ToPodDemand(pod).nvlink_required);
  ASSERT_TRUE(DecodePodJson(PodWithAnnotation("ai.auto-nvlink", "true"), &pod).ok());
  EXPECT_TRUE(ToPodDemand(pod).nvlink_auto);
  EXPECT_FALSE(ToPodDemand(pod).nvlink_required);

  // YAML: an unquoted true is the scalar "true"; a quoted threshold keeps its text.
  ASSERT_TRUE(DecodePodYaml("metadata:\n  annotations:\n    ai.nvlink-required: true\n"
                            "    ai.gpu-reject-threshold: '.8'\n",
                            &pod)
                  .ok());
  d = ToPodDemand(pod);
  EXPECT_EQ(d.invalid_reason, "");
  EXPECT_TRUE(d.nvlink_required);
  EXPECT_DOUBLE_EQ(d.gpu_reject_threshold.value_or(-1), 0.8);
  ASSERT_TRUE(
      DecodePodYaml("metadata:\n  annotations:\n    ai.gpu-reject-threshold: '0.8 '\n", &pod).ok());
  EXPECT_NE(ToPodDemand(pod).invalid_reason.find(R"("0.8 " is not a number in [0, 1])"),
            std::string::npos);
  ASSERT_TRUE(
      DecodePodYaml("metadata:\n  annotations:\n    ai.gpu-reject-threshold: .nan\n", &pod).ok());
  EXPECT_NE(ToPodDemand(pod).invalid_reason.find("ai.gpu-reject-threshold"), std::string::npos);
}

TEST(ToPodDemand, FirstProblemIsReported) {
  const char* json = R"({"metadata": {"annotations": {"ai.gpu-memory": "x",
      "ai.gpu-reject-threshold": "NaN"}},
    "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]}})";
  RawPod pod;
  ASSERT_TRUE(DecodePodJson(json, &pod).ok());
  const PodDemand d = ToPodDemand(pod);
  EXPECT_EQ(d.invalid_reason.rfind(R"(spec.containers[0].resources.limits["nvidia.com/gpu"])", 0),
            0u)
      << d.invalid_reason;
}

struct EnvCase {
  const char* name;
  const char* env;  // JSON array of env entries of the first container
  bool nvlink;
  LoadType type;
  const char* invalid;
};

TEST(ToPodDemand, Env) {
  const EnvCase cases[] = {
      {"none", "[]", false, LoadType::kUnspecified, ""},
      {"nvlink_true", R"([{"name": "AI_NV_LINK_REQUIRED", "value": "true"}])", true,
       LoadType::kUnspecified, ""},
      {"nvlink_one", R"([{"name": "AI_NV_LINK_REQUIRED", "value": "1"}])", true,
       LoadType::kUnspecified, ""},
      {"nvlink_false", R"([{"name": "AI_NV_LINK_REQUIRED", "value": "false"}])", false,
       LoadType::kUnspecified, ""},
      {"nvlink_zero", R"([{"name": "AI_NV_LINK_REQUIRED", "value": "0"}])", false,
       LoadType::kUnspecified, ""},
      {"nvlink_value_from", R"([{"name": "AI_NV_LINK_REQUIRED", "valueFrom": {}}])", false,
       LoadType::kUnspecified, ""},
      {"gpu_heavy", R"([{"name": "AI_LOAD_TYPE", "value": "GPU_HEAVY"}])", false,
       LoadType::kGpuHeavy, ""},
      {"io_heavy", R"([{"name": "AI_LOAD_TYPE", "value": "IO_HEAVY"}])", false, LoadType::kIoHeavy,
       ""},
      {"nvlink_heavy", R"([{"name": "AI_LOAD_TYPE", "value": "NVLINK_HEAVY"}])", false,
       LoadType::kNvlinkHeavy, ""},
      {"inference", R"([{"name": "AI_LOAD_TYPE", "value": "INFERENCE"}])", false,
       LoadType::kInference, ""},
      {"empty_type", R"([{"name": "AI_LOAD_TYPE", "value": ""}])", false, LoadType::kUnspecified,
       ""},
      {"type_value_from", R"([{"name": "AI_LOAD_TYPE", "valueFrom": {"configMapKeyRef": {}}}])",
       false, LoadType::kUnspecified, ""},
      {"unknown_type", R"([{"name": "AI_LOAD_TYPE", "value": "gpu_heavy"}])", false,
       LoadType::kUnspecified,
       R"(spec.containers[0] env AI_LOAD_TYPE: "gpu_heavy" is not a load type (expected )"
       R"(GPU_HEAVY, IO_HEAVY, NVLINK_HEAVY or INFERENCE))"},
  };
  for (const EnvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string json =
        std::string(R"({"spec": {"containers": [{"name": "a", "env": )") + c.env + "}]}}";
    RawPod pod;
    Status s = DecodePodJson(json, &pod);
    ASSERT_TRUE(s.ok()) << s.reason();
    const PodDemand d = ToPodDemand(pod);
    EXPECT_EQ(d.nvlink_required, c.nvlink);
    EXPECT_EQ(d.load_type, c.type);
    if (*c.invalid == '\0') {
      EXPECT_EQ(d.invalid_reason, "");
    } else {
      EXPECT_NE(d.invalid_reason.find(c.invalid), std::string::npos) << d.invalid_reason;
    }
  }
}

TEST(ToPodDemand, EnvInAnyContainerAndImages) {
  const char* yaml = R"(
spec:
  initContainers:
  - {name: init, image: busybox}
  containers:
  - {name: a, image: "nginx:1"}
  - name: b
    image: pytorch/pytorch
    env: [{name: AI_NV_LINK_REQUIRED, value: "true"}, {name: AI_LOAD_TYPE, value: NVLINK_HEAVY}]
  - {name: c, image: ""}
)";
  RawPod pod;
  Status s = DecodePodYaml(yaml, &pod);
  ASSERT_TRUE(s.ok()) << s.reason();
  const PodDemand d = ToPodDemand(pod);
  EXPECT_TRUE(d.nvlink_required);
  EXPECT_EQ(d.load_type, LoadType::kNvlinkHeavy);
  EXPECT_EQ(d.images, (std::vector<std::string>{"nginx:1", "pytorch/pytorch"}));
}

struct ThresholdCase {
  const char* text;
  double value;  // < 0: invalid
};

TEST(ParseRejectThreshold, StrictDecimal) {
  const ThresholdCase cases[] = {
      {"0.80", 0.8}, {".8", 0.8},   {"1", 1},      {"0", 0},
      {"1.000", 1},  {"0.", 0},     {"00.5", 0.5}, {"0.05", 0.05},
      {"1.", 1},     {"", -1},      {" 0.8", -1},  {"0.8 ", -1},
      {"NaN", -1},   {"nan", -1},   {"inf", -1},   {"1e9", -1},
      {"1e-1", -1},  {"-0.1", -1},  {"1.01", -1},  {"0x1", -1},
      {"0,8", -1},   {".", -1},     {"+0.5", -1},  {"2", -1},
      {"10", -1},    {"0.8.1", -1}, {"0.8\n", -1}, {"1.0000000000000000001", -1},
  };
  for (const ThresholdCase& c : cases) {
    SCOPED_TRACE(std::string("\"") + c.text + "\"");
    std::string error;
    const auto v = ParseRejectThreshold(c.text, &error);
    if (c.value < 0) {
      EXPECT_FALSE(v.has_value());
      EXPECT_NE(error.find("annotation ai.gpu-reject-threshold: "), std::string::npos) << error;
      EXPECT_NE(error.find("is not a number in [0, 1] (expected e.g. \"0.80\")"), std::string::npos)
          << error;
    } else {
      ASSERT_TRUE(v.has_value()) << error;
      EXPECT_DOUBLE_EQ(*v, c.value);
    }
  }
  std::string error;
  ParseRejectThreshold("0.8 ", &error);
  EXPECT_EQ(error, R"(annotation ai.gpu-reject-threshold: "0.8 " is not a number in [0, 1] )"
                   R"((expected e.g. "0.80"))");
}

// Every prefix of a valid pod is either decoded or rejected with a Status: never a crash.
TEST(DecodePod, TruncatedPrefixesDoNotCrash) {
  const std::string json = kFullPodJson;
  int json_ok = 0;
  for (std::size_t n = 0; n <= json.size(); ++n) {
    RawPod pod;
    Status s = DecodePodJson(std::string_view(json).substr(0, n), &pod);
    if (s.ok()) {
      ++json_ok;
      (void)ToPodDemand(pod);
    } else {
      EXPECT_FALSE(s.reason().empty());
    }
  }
  EXPECT_GE(json_ok, 1);  // at least the whole document
  const std::string yaml = kFullPodYaml;
  for (std::size_t n = 0; n <= yaml.size(); ++n) {
    RawPod pod;
    Status s = DecodePodText(std::string_view(yaml).substr(0, n), &pod);
    if (s.ok()) (void)ToPodDemand(pod);
  }
}

}  // namespace
}  // namespace tidal
