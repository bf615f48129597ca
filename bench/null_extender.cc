// The least an extender can do, for bench/scheduler-throughput.py's "null"
// profile: /filter passes every node it is given, /prioritize scores each 0. On
// the same HTTP server as tidal serve, with simdjson, no watches and no metrics,
// it measures what the extender protocol itself costs kube-scheduler (encoding
// ExtenderArgs, the round trips, decoding the answers) on this machine: a floor
// under any extender's throughput ratio.
//   null_extender PORT     (prints "listening on PORT" once it serves)
#include <simdjson.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/http/server.h"

namespace {

// The request's NodeNames (nodeCacheCapable), or nothing on a malformed body.
std::vector<std::string_view> NodeNames(simdjson::ondemand::parser& parser,
                                        simdjson::padded_string& json) {
  std::vector<std::string_view> names;
  simdjson::ondemand::document doc;
  simdjson::ondemand::array array;
  if (parser.iterate(json).get(doc) || doc["NodeNames"].get_array().get(array)) return names;
  for (auto element : array) {
    std::string_view name;
    if (!element.get_string().get(name)) names.push_back(name);
  }
  return names;
}

// Node names are DNS labels: nothing in them needs escaping in JSON.
void AppendQuoted(std::string* out, std::string_view name) {
  out->push_back('"');
  out->append(name);
  out->push_back('"');
}

void Filter(const tidal::http::Request& req, tidal::http::Response& res) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(req.body);
  std::string out = R"({"NodeNames":[)";
  bool first = true;
  for (std::string_view name : NodeNames(parser, json)) {
    if (!first) out.push_back(',');
    first = false;
    AppendQuoted(&out, name);
  }
  out += R"(],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})";
  res.Set(std::move(out), "application/json");
}

void Prioritize(const tidal::http::Request& req, tidal::http::Response& res) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(req.body);
  std::string out = "[";
  bool first = true;
  for (std::string_view name : NodeNames(parser, json)) {
    if (!first) out.push_back(',');
    first = false;
    out += R"({"Host":)";
    AppendQuoted(&out, name);
    out += R"(,"Score":0})";
  }
  out += "]";
  res.Set(std::move(out), "application/json");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: null_extender PORT\n";
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  tidal::http::Options o;
  o.port = std::atoi(argv[1]);
  o.limits.max_body_bytes = std::size_t{64} << 20;
  tidal::http::Server server(o);
  server.Route("POST", "/filter", Filter);
  server.Route("POST", "/prioritize", Prioritize);
  if (const tidal::Status st = server.Start(); !st.ok()) {
    std::cerr << "null_extender: " << st.reason() << "\n";
    return 1;
  }
  std::cout << "listening on " << server.port() << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  server.Stop();
  return 0;
}
