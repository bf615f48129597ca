#include "tidal/extender/wire.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tidal::extender {
namespace {

using json = nlohmann::json;

// A FailedNodes member written as the extender writes it: in place.
void AppendMember(std::string_view key, std::string_view value, std::string* run) {
  const std::size_t at = OpenJsonMember(key, run);
  run->append(value);
  CloseJsonMember(at, run);
}

std::string Sample(const std::string& name) {
  std::ifstream in(std::string(TIDAL_TESTDATA_DIR) + "/reference/extender/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Wire, PercentSignsAreSpelledOutForPrintfStyleEvents) {
  const struct {
    const char* name;
    std::string text;
    std::size_t from;
    std::string want;
  } cases[] = {
      {"none", "GPU memory over threshold", 0, "GPU memory over threshold"},
      {"two", "GPU memory 93% over reject threshold 82%", 0,
       "GPU memory 93 percent over reject threshold 82 percent"},
      {"after a space", "a % b", 0, "a percent b"},
      {"only after from", "50%,x: 7%", 5, "50%,x: 7 percent"},
      {"at from", "ab%", 2, "abpercent"},
      {"printf verbs", "%s%d", 0, "percents percentd"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string text = c.text;
    SpellOutPercentSigns(&text, c.from);
    EXPECT_EQ(text, c.want);
  }
}

TEST(Wire, DecodesTheRealExtenderArgs) {
  ExtenderArgs a;
  Status s = DecodeExtenderArgs(Sample("ExtenderArgs.json"), {}, &a);
  ASSERT_TRUE(s.ok()) << s.reason();
  EXPECT_EQ(a.pod.name, "podname");
  ASSERT_TRUE(a.has_nodes);
  ASSERT_EQ(a.nodes.size(), 1u);
  EXPECT_EQ(a.nodes[0].name, "nodename");
  EXPECT_EQ(a.nodes[0].allocatable_gpus, -1);
  EXPECT_TRUE(a.has_node_names);
  EXPECT_EQ(a.node_names.Strings(), std::vector<std::string>{"node1"});
  // The echoed object is the same JSON as sent.
  EXPECT_EQ(nlohmann::json::parse(a.nodes[0].json),
            nlohmann::json::parse(Sample("ExtenderArgs.json"))["Nodes"]["items"][0]);
}

TEST(Wire, KeysAreCaseInsensitiveAndNullIsAbsent) {
  const char* pod = R"({"metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"c",
    "resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})";
  struct Case {
    const char* name;
    std::string body;
    bool has_nodes, has_names;
    std::size_t count;
  };
  const Case cases[] = {
      {"PascalCase names",
       std::string(R"({"Pod":)") + pod + R"(,"Nodes":null,"NodeNames":["a","b"]})", false, true, 2},
      {"lower case", std::string(R"({"pod":)") + pod + R"(,"nodenames":["a"]})", false, true, 1},
      // Found by fuzz_extender_args: a NodeList without items was iterated as a
      // default simdjson array (undefined behaviour).
      {"a NodeList without items",
       std::string(R"({"Pod":)") + pod + R"(,"Nodes":{"metadata":{},"x":[]}})", true, false, 0},
      {"camelCase nodes",
       std::string(R"({"pod":)") + pod +
           R"(,"nodes":{"items":[{"metadata":{"name":"g1","labels":{"tidal.io/pool":"golden"}},
           "status":{"allocatable":{"nvidia.com/gpu":"4","cpu":"15500m","memory":"64Gi"}}}]},"NodeNames":null})",
       true, false, 1},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ExtenderArgs a;
    Status s = DecodeExtenderArgs(tc.body, {}, &a);
    ASSERT_TRUE(s.ok()) << s.reason();
    EXPECT_EQ(a.pod.namespace_name, "ml");
    EXPECT_EQ(a.has_nodes, tc.has_nodes);
    EXPECT_EQ(a.has_node_names, tc.has_names);
    EXPECT_EQ(tc.has_nodes ? a.nodes.size() : a.node_names.size(), tc.count);
    if (tc.has_nodes && tc.count > 0) {
      EXPECT_EQ(a.nodes[0].labels.at("tidal.io/pool"), "golden");
      EXPECT_EQ(a.nodes[0].allocatable_gpus, 4);
      EXPECT_EQ(a.nodes[0].cpu_milli_allocatable, 15500);
      EXPECT_EQ(a.nodes[0].memory_allocatable, 64LL << 30);
    }
  }
}

TEST(Wire, MalformedArgsNameTheField) {
  const std::string pod = R"({"metadata":{"name":"p"}})";
  struct Case {
    const char* name;
    std::string body;
    const char* want;
  };
  const Case cases[] = {
      {"not JSON", "{\"Pod\":", "not JSON"},
      {"an array", "[]", "expected an ExtenderArgs object"},
      {"no pod", R"({"NodeNames":["a"]})", "Pod: expected the Pod object"},
      {"no candidates", R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":null})",
       "neither Nodes nor NodeNames"},
      {"names not an array", R"({"Pod":)" + pod + R"(,"NodeNames":"a"})",
       "NodeNames: expected an array"},
      {"empty name", R"({"Pod":)" + pod + R"(,"NodeNames":["a",""]})", "NodeNames[1]"},
      {"node without a name", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{}}]}})",
       "Nodes.items[0].metadata.name"},
      {"fractional GPUs",
       R"({"Pod":)" + pod +
           R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":"1.5"}}}]}})",
       "Nodes.items[0].status.allocatable.nvidia.com/gpu"},
      {"label not a string",
       R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":"n","labels":{"a":1}}}]}})",
       "Nodes.items[0].metadata.labels.a"},
      {"content after the object", R"({"Pod":)" + pod + R"(,"NodeNames":["a"]} {})",
       "content after the ExtenderArgs object"},
      {"truncated inside the names", R"({"Pod":)" + pod + R"(,"NodeNames":["a",)", "not JSON"},
      {"a node that is not an object",
       R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":"n"}},3]}})",
       "Nodes.items[1]: expected a Node object"},
      {"items not an array", R"({"Pod":)" + pod + R"(,"Nodes":{"items":{}}})",
       "Nodes.items: expected an array"},
      {"allocatable not an object",
       R"({"Pod":)" + pod +
           R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"allocatable":[]}}]}})",
       "Nodes.items[0].status.allocatable: expected an object"},
      {"a name that is a number", R"({"Pod":)" + pod + R"(,"NodeNames":["a",7]})", "NodeNames[1]"},
      {"pod not an object", R"({"Pod":[],"NodeNames":["a"]})", "Pod: expected the Pod object"},
      // Found by fuzz_extender_args: on-demand skips the fields it does not read, so a
      // malformed one was echoed back and the reply was not JSON.
      {"a malformed field the decoder does not read",
       R"({"Pod":)" + pod +
           R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"nodeInfo":{"a":"b""c":""}}}]}})",
       "Nodes.items[0]: not valid JSON"},
      {"a bad literal the decoder does not read",
       R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"spec":{"x":tru}}]}})",
       "Nodes.items[0]: not valid JSON"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ExtenderArgs a;
    Status s = DecodeExtenderArgs(tc.body, {}, &a);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.reason().find(tc.want), std::string::npos) << s.reason();
    EXPECT_FALSE(a.has_nodes || a.has_node_names) << "a failed decode leaves nothing to use";
  }
}

// Survivors are echoed as the request sent them: the node's own bytes, spaces
// inside kept, the separator and whitespace after it not.
TEST(Wire, EchoesEachNodeAsSent) {
  const std::string body =
      R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[ {"metadata": {"name":"a"}, "x":[1, 2]} ,
    {"metadata":{"name":"b","labels":{"k":"v"}}}
  ]}})";
  ExtenderArgs a;
  ASSERT_TRUE(DecodeExtenderArgs(body, {}, &a).ok());
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.nodes[0].json, R"({"metadata": {"name":"a"}, "x":[1, 2]})");
  EXPECT_EQ(a.nodes[1].json, R"({"metadata":{"name":"b","labels":{"k":"v"}}})");
  ASSERT_TRUE(DecodeExtenderArgs(body, DecodeOptions{/*keep_node_json=*/false}, &a).ok());
  EXPECT_EQ(a.nodes[1].json, "");
}

// A request context decodes one request after another into the same args: nothing
// of a bigger earlier request may show through.
TEST(Wire, AReusedDecoderKeepsNothingOfTheLastRequest) {
  const std::string pod = R"({"metadata":{"name":"p","annotations":{"ai.gpu-memory":"10Gi"}}})";
  const std::string big =
      R"({"Pod":)" + pod +
      R"(,"Nodes":{"items":[{"metadata":{"name":"n1","labels":{"a":"1","b":"2","c":"3"}},
         "status":{"allocatable":{"nvidia.com/gpu":"8","cpu":"96","memory":"1Ti"}}},
         {"metadata":{"name":"n2","labels":{"z":"9"}}}]},"NodeNames":["n1","n2","n3"]})";
  const std::string small =
      R"({"Pod":{"metadata":{"name":"q"}},"Nodes":{"items":[{"metadata":{"name":"m1","labels":{"b":"x"}}}]},"NodeNames":["m1"]})";
  ArgsDecoder decoder;
  ExtenderArgs a;
  ASSERT_TRUE(decoder.Decode(big, {}, &a).ok());
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.nodes[0].labels.size(), 3u);
  ASSERT_TRUE(decoder.Decode(small, {}, &a).ok());
  EXPECT_EQ(a.pod.name, "q");
  EXPECT_TRUE(a.pod.annotations.empty());
  ASSERT_EQ(a.nodes.size(), 1u);
  EXPECT_EQ(a.nodes[0].name, "m1");
  EXPECT_EQ(a.nodes[0].labels, (Labels{{"b", "x"}}));
  EXPECT_EQ(a.nodes[0].allocatable_gpus, -1);
  EXPECT_EQ(a.nodes[0].cpu_milli_allocatable, 0);
  EXPECT_EQ(a.nodes[0].memory_allocatable, 0);
  EXPECT_EQ(a.node_names.Strings(), std::vector<std::string>{"m1"});
  // A failed decode in between leaves nothing usable, and the next one still works.
  EXPECT_FALSE(decoder.Decode("{\"Pod\":", {}, &a).ok());
  EXPECT_TRUE(a.nodes.empty() && a.node_names.empty());
  ASSERT_TRUE(decoder.Decode(big, {}, &a).ok());
  EXPECT_EQ(a.nodes[1].labels, (Labels{{"z", "9"}}));
  EXPECT_EQ(a.node_names.size(), 3u);
}

// Names are read from their tokens when they have no escapes, unescaped when they
// do; spaces around them are not part of them; a name that is not a string is an error.
TEST(Wire, NodeNamesWithAndWithoutEscapes) {
  struct Case {
    const char* name;
    std::string names_json;
    std::vector<std::string> want;  // empty: an error
  };
  const Case cases[] = {
      {"plain", R"(["n1","gpu-node-2"])", {"n1", "gpu-node-2"}},
      {"spaces and newlines between tokens", "[ \"n1\" ,\n\t\"n2\"\r\n ]", {"n1", "n2"}},
      {"escaped quote", R"(["a\"b","c"])", {"a\"b", "c"}},
      {"escaped backslash last", R"(["a\\"])", {"a\\"}},
      {"unicode escape", R"(["\u00e9t\u00e9"])", {"\u00e9t\u00e9"}},
      {"raw UTF-8", R"(["ノード"])", {"ノード"}},
      {"a number", R"(["n1",7])", {}},
      {"empty", R"(["n1",""])", {}},
      {"null", R"([null])", {}},
  };
  ArgsDecoder decoder;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ExtenderArgs a;
    const std::string body =
        R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":)" + tc.names_json + "}";
    const Status s = decoder.Decode(body, {}, &a);
    if (tc.want.empty()) {
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.reason().find("NodeNames["), std::string::npos) << s.reason();
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.reason();
    EXPECT_EQ(a.node_names.Strings(), tc.want);
    EXPECT_EQ(a.pod_json, R"({"metadata":{"name":"p"}})");
  }
}

TEST(Wire, EncodesWhatKubeSchedulerReads) {
  WireNode n1;
  n1.name = "n1";
  n1.allocatable_gpus = 4;
  n1.json = R"({"metadata":{"name":"n1"}})";
  FilterResult r;
  r.with_nodes = true;
  r.with_node_names = true;
  r.nodes = {&n1};
  r.node_names = {"n1"};
  r.failed = {{"n2", "tidal: loadaware: GPU memory 88% over reject threshold 82%"}};
  r.unresolvable = {{"n3", "tidal: gpufit: pod needs 8 GPUs, node has 4"}};
  std::string out;
  EncodeFilterResult(r, &out);
  EXPECT_EQ(
      out,
      R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1"}}]},"NodeNames":["n1"],)"
      R"("FailedNodes":{"n2":"tidal: loadaware: GPU memory 88% over reject threshold 82%"},)"
      R"("FailedAndUnresolvableNodes":{"n3":"tidal: gpufit: pod needs 8 GPUs, node has 4"},"Error":""})");

  FilterResult names_only;
  names_only.with_node_names = true;  // every node rejected: an explicit empty list
  EncodeFilterResult(names_only, &out);
  EXPECT_EQ(
      out,
      R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");

  // Runs encoded apart (by parts of a request) join the entries with one comma
  // each, empty runs leave none.
  std::string names_run, failed_run, unresolvable_run;
  AppendJsonListItem("n5", &names_run);
  AppendJsonListItem("n\"6", &names_run);
  AppendMember("n7", "tidal: why\n", &failed_run);
  AppendMember("n8", "tidal: other", &failed_run);
  AppendMember("n9", "tidal: never", &unresolvable_run);
  FilterResult runs;
  runs.with_node_names = true;
  runs.node_names = {"n4"};
  runs.node_names_json = {"", names_run, ""};
  runs.failed_json = {failed_run, "", std::string_view(failed_run).substr(0, failed_run.find(','))};
  runs.unresolvable_json = {"", unresolvable_run};
  EncodeFilterResult(runs, &out);
  EXPECT_EQ(out, R"({"Nodes":null,"NodeNames":["n4","n5","n\"6"],)"
                 R"("FailedNodes":{"n7":"tidal: why\n","n8":"tidal: other","n7":"tidal: why\n"},)"
                 R"("FailedAndUnresolvableNodes":{"n9":"tidal: never"},"Error":""})");

  EncodeHostPriorityList({{"myhost", 1}, {"b\"q", 10}}, &out);
  EXPECT_EQ(out, R"([{"Host":"myhost","Score":1},{"Host":"b\"q","Score":10}])");
  EXPECT_EQ(nlohmann::json::parse(out)[0], nlohmann::json::parse(Sample("HostPriority.json")));
  EncodeBindingResult("", &out);
  EXPECT_EQ(out, R"({"Error":""})");
  std::string esc;
  AppendJsonString(std::string("a\n\x01", 3), &esc);
  EXPECT_EQ(esc, R"("a\n\u0001")");
}

// The prioritize request to expect after a filter: what kube-scheduler (Go's
// json.Marshal, here nlohmann's compact dump, the same bytes) sends, and what
// decodes back to that Pod and those names.
TEST(Wire, NamesArgsAsKubeSchedulerEncodesThem) {
  const std::string pod = R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":null}})";
  const struct {
    const char* name;
    std::vector<std::string> names;
    std::vector<std::string_view> runs;
  } cases[] = {
      {"runs with empty ones between", {"a", "b", "c"}, {"", R"("a","b")", "", R"("c")", ""}},
      {"one run", {"gpu-node-1"}, {R"("gpu-node-1")"}},
      {"no names", {}, {"", ""}},
      {"no runs", {}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = "stale";
    EncodeNamesArgs(pod, c.runs, &got);
    // Go writes a struct's fields in their order: Pod, Nodes, NodeNames.
    const nlohmann::ordered_json sent = {
        {"Pod", nlohmann::ordered_json::parse(pod)}, {"Nodes", nullptr}, {"NodeNames", c.names}};
    EXPECT_EQ(got, sent.dump());
    ExtenderArgs a;
    ArgsDecoder decoder;
    ASSERT_TRUE(decoder.Decode(got, {}, &a).ok());
    EXPECT_EQ(a.pod_json, pod);
    EXPECT_EQ(a.node_names.Strings(), c.names);
  }
  EXPECT_EQ(TrimJsonSpaceRight("{} \t\r\n"), "{}");
  EXPECT_EQ(TrimJsonSpaceRight(" x"), " x");
  EXPECT_EQ(TrimJsonSpaceRight("  "), "");
}

// The filter's verdicts written straight from the memo's arrays: the same bytes
// as the list encoder, with names that need escapes and names that do not.
TEST(Wire, HostPrioritiesFromArraysAsFromAList) {
  const struct {
    const char* name;
    std::vector<std::string> names;
    std::vector<char> keep;
    std::vector<std::int64_t> scores;
  } cases[] = {
      {"none kept", {"a", "b"}, {0, 0}, {1, 2}},
      {"plain names, some kept", {"gpu-node-1", "gpu-node-22", "n"}, {1, 0, 1}, {10, 3, 0}},
      {"a name with a quote", {"n1", "b\"q", "n3"}, {1, 1, 1}, {7, 10, 5}},
      {"a control byte in a dropped name", {"ok", std::string("x\x01")}, {1, 0}, {9, 9}},
      {"empty list", {}, {}, {}},
      // The reply is sized from the widest score: every width must fit.
      {"scores of every width",
       {"a", "b", "c", "d"},
       {1, 1, 1, 1},
       {std::numeric_limits<std::int64_t>::max(), 0, 123456, 10}},
      {"a negative score", {"a", "b"}, {1, 1}, {std::numeric_limits<std::int64_t>::min(), 5}},
      {"scores at the edges of 0..10",
       {"a", "b", "c", "d", "e"},
       {1, 1, 1, 1, 1},
       {-1, 1, 9, 10, 11}},
      {"the widest score on a dropped node", {"a", "b"}, {1, 0}, {3, 99999999999}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    StringList names;
    std::vector<HostPriority> list;
    for (std::size_t i = 0; i < c.names.size(); ++i) {
      names.push_back(c.names[i]);
      if (c.keep[i]) list.push_back({c.names[i], c.scores[i]});
    }
    std::string want, got = "stale";
    EncodeHostPriorityList(list, &want);
    EncodeHostPriorities(names, c.keep, c.scores, &got);
    EXPECT_EQ(got, want);
    EXPECT_NO_THROW(EXPECT_TRUE(nlohmann::json::parse(got).is_array()));
  }
}

TEST(Wire, BindingArgs) {
  BindingArgs b;
  ASSERT_TRUE(DecodeBindingArgs(Sample("ExtenderBindingArgs.json"), &b).ok());
  EXPECT_EQ(b.pod_name, "mypodname");
  EXPECT_EQ(b.pod_namespace, "mypodnamespace");
  EXPECT_EQ(b.pod_uid, "mypoduid");
  EXPECT_EQ(b.node, "mynode");
  EXPECT_FALSE(DecodeBindingArgs(R"({"PodName":"p"})", &b).ok());
  EXPECT_FALSE(DecodeBindingArgs(R"({"PodName":1,"Node":"n"})", &b).ok());
}

}  // namespace
}  // namespace tidal::extender
