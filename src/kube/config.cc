#include "tidal/kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tidal/core/file.h"
#include "tidal/core/status.h"

namespace tidal::kube {
namespace {

// The file's text; an InputError naming `what` and the path's problem.
std::string ReadWholeFile(const std::string& path, const std::string& what) {
  std::string text;
  if (const Status s = ReadRegularFile(path, kMaxConfigFileBytes, &text); !s.ok())
    throw InputError{what + ": " + s.reason()};
  return text;
}

std::string Resolve(const std::string& dir, const std::string& file) {
  if (file.empty() || file.front() == '/' || dir.empty()) return file;
  return dir + "/" + file;
}

// A scalar string field, or empty when absent; a non-scalar is an error.
std::string Scalar(const YAML::Node& node, const std::string& key, const std::string& where) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return "";
  if (!v.IsScalar()) throw InputError{where + "." + key + ": expected a string"};
  return v.as<std::string>();
}

// The entry of a named list (clusters, users, contexts) with the given name.
YAML::Node Named(const YAML::Node& root, const std::string& list, const std::string& name,
                 const std::string& where) {
  const YAML::Node items = root[list];
  if (items && !items.IsNull() && !items.IsSequence())
    throw InputError{where + ": " + list + ": expected a list"};
  if (items) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      const YAML::Node item = items[i];
      if (!item.IsMap()) continue;
      const YAML::Node n = item["name"];
      if (n && n.IsScalar() && n.as<std::string>() == name) {
        const std::string field = list == "clusters" ? "cluster"
                                  : list == "users"  ? "user"
                                                     : "context";
        const YAML::Node body = item[field];
        if (!body || !body.IsMap())
          throw InputError{where + ": " + list + "[" + std::to_string(i) + "]." + field +
                           ": expected a mapping"};
        return body;
      }
    }
  }
  throw InputError{where + ": no " + list + " entry named \"" + name + "\""};
}

// PEM text from an inline base64 `*-data` field or a file field.
std::string PemFrom(const YAML::Node& node, const std::string& data_key,
                    const std::string& file_key, const std::string& dir, const std::string& where) {
  const std::string data = Scalar(node, data_key, where);
  if (!data.empty()) {
    auto decoded = DecodeBase64(data);
    if (!decoded) throw InputError{where + "." + data_key + ": not valid base64"};
    return *decoded;
  }
  const std::string file = Scalar(node, file_key, where);
  if (file.empty()) return "";
  const std::string path = Resolve(dir, file);
  return ReadWholeFile(path, where + "." + file_key);
}

}  // namespace

std::optional<Endpoint> ParseServerUrl(const std::string& url, std::string* error) {
  Endpoint e;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    e.scheme = "https";
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    e.scheme = "http";
    rest = url.substr(7);
    e.port = 80;
  } else {
    *error = "\"" + url + "\": expected an https:// or http:// URL";
    return std::nullopt;
  }
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    if (rest.substr(slash) != "/") {
      *error = "\"" + url + "\": a path after the host is not supported";
      return std::nullopt;
    }
    rest.resize(slash);
  }
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) {
      *error = "\"" + url + "\": unterminated IPv6 address";
      return std::nullopt;
    }
    e.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') {
        *error = "\"" + url + "\": expected :port after the address";
        return std::nullopt;
      }
      port = rest.substr(close + 2);
    }
  } else if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    e.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  } else {
    e.host = rest;
  }
  if (e.host.empty()) {
    *error = "\"" + url + "\": no host";
    return std::nullopt;
  }
  if (!port.empty()) {
    int p = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || p > 65535) {
        *error = "\"" + url + "\": the port is not a number in 1..65535";
        return std::nullopt;
      }
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) {
      *error = "\"" + url + "\": the port is not a number in 1..65535";
      return std::nullopt;
    }
    e.port = p;
  }
  return e;
}

Getenv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Endpoint InClusterEndpoint(const Getenv& env, const std::string& service_account_dir) {
  const auto host = env("KUBERNETES_SERVICE_HOST");
  const auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    throw InputError{
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
        "(not running in a pod? pass --kubeconfig FILE)"};
  const bool v6 = host->find(':') != std::string::npos;
  std::string error;
  auto e = ParseServerUrl("https://" + (v6 ? "[" + *host + "]" : *host) + ":" + *port, &error);
  if (!e) throw InputError{"in-cluster config: " + error};
  e->source = "in-cluster";
  e->token_file = service_account_dir + "/token";
  ReadWholeFile(e->token_file, "in-cluster config: the service-account token");
  e->ca_pem =
      ReadWholeFile(service_account_dir + "/ca.crt", "in-cluster config: the service-account CA");
  return *e;
}

Endpoint LoadKubeconfig(const std::string& path, const std::string& context) {
  return ParseKubeconfig(ReadWholeFile(path, "the kubeconfig"), path, context);
}

Endpoint ParseKubeconfig(const std::string& yaml_text, const std::string& path,
                         const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError{path + ": not valid YAML: " + e.what()};
  }
  if (!root.IsMap()) throw InputError{path + ": expected a kubeconfig mapping"};
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::string ctx_name = context.empty() ? Scalar(root, "current-context", path) : context;
  if (ctx_name.empty()) throw InputError{path + ": no current-context (pass --kube-context)"};
  const std::string where = path + " (context " + ctx_name + ")";
  const YAML::Node ctx = Named(root, "contexts", ctx_name, path);
  const std::string cluster_name = Scalar(ctx, "cluster", where + " context");
  const std::string user_name = Scalar(ctx, "user", where + " context");
  if (cluster_name.empty()) throw InputError{where + ": the context names no cluster"};
  const YAML::Node cluster = Named(root, "clusters", cluster_name, path);
  const std::string cw = where + " cluster " + cluster_name;
  std::string error;
  auto e = ParseServerUrl(Scalar(cluster, "server", cw), &error);
  if (!e) throw InputError{cw + ".server: " + error};
  e->source = path + " context " + ctx_name;
  e->ca_pem = PemFrom(cluster, "certificate-authority-data", "certificate-authority", dir, cw);
  if (const YAML::Node skip = cluster["insecure-skip-tls-verify"]; skip && skip.IsScalar())
    e->insecure_skip_verify = skip.as<std::string>() == "true";
  if (!user_name.empty()) {
    const YAML::Node user = Named(root, "users", user_name, path);
    const std::string uw = where + " user " + user_name;
    if (user["exec"] || user["auth-provider"])
      throw InputError{uw +
                       ": exec and auth-provider credentials are not supported; use a token "
                       "or a client certificate"};
    e->token = Scalar(user, "token", uw);
    e->token_file = Resolve(dir, Scalar(user, "tokenFile", uw));
    e->client_cert_pem = PemFrom(user, "client-certificate-data", "client-certificate", dir, uw);
    e->client_key_pem = PemFrom(user, "client-key-data", "client-key", dir, uw);
    if (e->client_cert_pem.empty() != e->client_key_pem.empty())
      throw InputError{uw + ": a client certificate needs its key, and a key its certificate"};
  }
  return *e;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    if (padding) return std::nullopt;  // data after padding
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return std::nullopt;  // a dangling sextet is not whole bytes
  return out;
}

}  // namespace tidal::kube
