// tidal::http::Server against raw sockets: each limit of docs/hardening.md's HTTP
// rows, pipelining, idle and slow clients, the connection limit, shutdown, TLS.
#include "tidal/http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/process.h"
#include "testing/tls.h"

namespace tidal::http {
namespace {

// A liveness bound, not a speed figure: a test that would hang fails instead.
constexpr int kPatienceMs = 10'000;

class RawClient {
 public:
  explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  // False once the server has closed (or reset) the connection.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Reads until `responses` complete answers (by Content-Length) or EOF.
  std::string ReadResponses(int responses) {
    std::string got;
    int complete = 0;
    while (complete < responses && ReadSome(&got)) complete = CountComplete(got);
    return got;
  }
  // Reads until `marker` arrives (or EOF).
  std::string ReadUntil(std::string_view marker) {
    std::string got;
    while (got.find(marker) == std::string::npos && ReadSome(&got)) {
    }
    return got;
  }
  // Waits for the server to close: true on EOF or reset.
  bool ClosedByServer() {
    std::string ignored;
    while (ReadSome(&ignored)) {
    }
    return eof_;
  }

 private:
  bool ReadSome(std::string* out) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, kPatienceMs) <= 0) return false;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    out->append(buf, static_cast<std::size_t>(n));
    return true;
  }
  static int CountComplete(const std::string& s) {
    int n = 0;
    std::size_t at = 0;
    while (true) {
      const std::size_t head_end = s.find("\r\n\r\n", at);
      if (head_end == std::string::npos) return n;
      const std::size_t cl = s.find("Content-Length: ", at);
      if (cl == std::string::npos || cl > head_end) return n;
      const std::size_t len = std::stoul(s.substr(cl + 16));
      if (s.size() < head_end + 4 + len) return n;
      ++n;
      at = head_end + 4 + len;
    }
  }
  int fd_;
  bool connected_ = false;
  bool eof_ = false;
};

template <class F>
bool Eventually(F f) {
  for (int waited = 0; waited < kPatienceMs; waited += 5) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string Post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return std::string("POST ") + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" +
         std::string(extra) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         std::string(body);
}
constexpr const char* kGetHealth = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";

struct Served {
  std::unique_ptr<Server> server;
  explicit Served(Limits limits, Options o = {}) {
    o.port = 0;
    o.limits = limits;
    server = std::make_unique<Server>(std::move(o));
    server->Route("GET", "/health",
                  [](const Request&, Response& r) { r.Set("ok\n", "text/plain"); });
    server->Route("POST", "/echo", [](const Request& q, Response& r) {
      r.Set(std::to_string(q.body.size()) + ":" + q.body.substr(0, 16), "text/plain");
    });
    server->Route("POST", "/throw",
                  [](const Request&, Response&) { throw std::runtime_error("broken handler"); });
    EXPECT_TRUE(server->Start().ok());
  }
  int port() const { return server->port(); }
};

Limits SmallLimits() {
  Limits l;
  l.max_body_bytes = 1024;
  l.max_header_bytes = 2048;
  l.threads = 1;
  return l;
}

TEST(HttpServer, RefusesWhatIsOverALimitBeforeReadingIt) {
  struct Case {
    const char* name;
    std::string request;
    std::string want_status;
    bool want_closed;
  };
  const std::string chunk = "400\r\n" + std::string(1024, 'a') + "\r\n";
  const Case cases[] = {
      {"a small body is answered", Post("/echo", "hello"), "HTTP/1.1 200 OK", false},
      {"identity encoding is no encoding", Post("/echo", "hello", "Content-Encoding: identity\r\n"),
       "HTTP/1.1 200 OK", false},
      {"gzip is refused, never decompressed",
       Post("/echo", "\x1f\x8b", "Content-Encoding: gzip\r\n"),
       "HTTP/1.1 415 Unsupported Media Type", true},
      {"deflate is refused", Post("/echo", "xx", "Content-Encoding: deflate\r\n"),
       "HTTP/1.1 415 Unsupported Media Type", true},
      {"a claimed length over the limit, body never sent",
       "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n",
       "HTTP/1.1 413 Payload Too Large", true},
      {"a chunked body over the limit",
       "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk,
       "HTTP/1.1 413 Payload Too Large", true},
      {"a chunked body under the limit is decoded",
       "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
       "HTTP/1.1 200 OK", false},
      {"headers over the limit",
       "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4096, 'h') + "\r\n\r\n",
       "HTTP/1.1 431 Request Header Fields Too Large", true},
      {"an unknown path", "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 404 Not Found", false},
      {"a known path, another method", Post("/health", ""), "HTTP/1.1 405 Method Not Allowed",
       false},
  };
  Served s(SmallLimits());
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    RawClient c(s.port());
    ASSERT_TRUE(c.connected());
    c.Send(tc.request);
    const std::string got = c.ReadResponses(1);
    EXPECT_EQ(StatusLine(got), tc.want_status) << got;
    if (tc.want_closed) {
      EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
      EXPECT_TRUE(c.ClosedByServer());
    } else {
      EXPECT_EQ(got.find("Connection: close"), std::string::npos) << got;
    }
  }
  const Counters n = s.server->counters();
  EXPECT_EQ(n.unsupported_encoding, 2u);
  EXPECT_EQ(n.body_too_large, 2u);
  EXPECT_EQ(n.headers_too_large, 1u);
}

TEST(HttpServer, AnswersPipelinedRequestsInOrder) {
  Served s(SmallLimits());
  RawClient c(s.port());
  c.Send(Post("/echo", "first") + Post("/echo", "second") + kGetHealth);
  const std::string got = c.ReadResponses(3);
  const std::size_t first = got.find("5:first"), second = got.find("6:second"),
                    third = got.find("ok\n");
  ASSERT_NE(first, std::string::npos) << got;
  ASSERT_NE(second, std::string::npos) << got;
  ASSERT_NE(third, std::string::npos) << got;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
}

TEST(HttpServer, ExpectContinueGetsAnInterimAnswer) {
  Served s(SmallLimits());
  RawClient c(s.port());
  c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  // The interim answer has no Content-Length.
  std::string got = c.ReadUntil("\r\n\r\n");
  EXPECT_EQ(StatusLine(got), "HTTP/1.1 100 Continue");
  c.Send("abc");
  got += c.ReadResponses(1);
  EXPECT_NE(got.find("3:abc"), std::string::npos) << got;
}

// One handler thread and many connections that send nothing (or stopped after a
// request): a thread-per-connection server would answer no one else.
TEST(HttpServer, IdleConnectionsHoldNoThread) {
  Served s(SmallLimits());
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 50; ++i) idle.push_back(std::make_unique<RawClient>(s.port()));
  for (int i = 0; i < 10; ++i) {
    auto& c = idle[static_cast<std::size_t>(i)];
    c->Send(kGetHealth);
    ASSERT_EQ(StatusLine(c->ReadResponses(1)), "HTTP/1.1 200 OK");
  }
  RawClient fresh(s.port());
  fresh.Send(kGetHealth);
  EXPECT_EQ(StatusLine(fresh.ReadResponses(1)), "HTTP/1.1 200 OK");
}

TEST(HttpServer, ClosesHeadersThatMissTheirDeadline) {
  Limits l = SmallLimits();
  // Long enough that a loaded machine (CI runs tests two at a time) does not
  // stall the valid request past it.
  l.header_timeout_ms = 1500;
  Served s(l);
  RawClient slow(s.port());
  slow.Send("GET /hea");  // and nothing more: a slowloris between two bytes
  RawClient other(s.port());
  other.Send(kGetHealth);
  EXPECT_EQ(StatusLine(other.ReadResponses(1)), "HTTP/1.1 200 OK");
  EXPECT_TRUE(slow.ClosedByServer());
  // The deadline's timer closes the socket before the read's handler counts it.
  EXPECT_TRUE(Eventually([&] { return s.server->counters().header_timeouts == 1; }));
}

TEST(HttpServer, ClosesTheLongestIdleConnectionToAdmitANewOne) {
  Limits l = SmallLimits();
  l.max_connections = 3;
  Served s(l);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<RawClient>(s.port()));
    clients.back()->Send(kGetHealth);  // answered: then idle, in this order
    ASSERT_EQ(StatusLine(clients.back()->ReadResponses(1)), "HTTP/1.1 200 OK");
  }
  RawClient fourth(s.port());
  fourth.Send(kGetHealth);
  EXPECT_EQ(StatusLine(fourth.ReadResponses(1)), "HTTP/1.1 200 OK");
  EXPECT_TRUE(clients[0]->ClosedByServer()) << "the longest idle goes";
  clients[1]->Send(kGetHealth);
  EXPECT_EQ(StatusLine(clients[1]->ReadResponses(1)), "HTTP/1.1 200 OK") << "the others stay";
  EXPECT_EQ(s.server->counters().idle_closed_for_room, 1u);
}

TEST(HttpServer, RefusesANewConnectionWhenNoneIsIdle) {
  Limits l = SmallLimits();
  l.max_connections = 2;
  Served s(l);
  RawClient a(s.port()), b(s.port());
  a.Send("GET /he");  // both in the middle of a request: not idle
  b.Send("GET /he");
  for (int i = 0; i < 1000 && s.server->counters().open_connections < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RawClient third(s.port());
  third.Send(kGetHealth);
  EXPECT_TRUE(third.ClosedByServer());
  EXPECT_EQ(s.server->counters().refused_at_limit, 1u);
  a.Send("alth HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(StatusLine(a.ReadResponses(1)), "HTTP/1.1 200 OK");
}

TEST(HttpServer, StopReturnsWhateverTheClientsDo) {
  Served s(SmallLimits());
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(std::make_unique<RawClient>(s.port()));
    slow.back()->Send("POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\nab");
  }
  s.server->Stop();  // a hang here fails the test by its timeout
  RawClient late(s.port());
  EXPECT_FALSE(late.connected() && late.Send(kGetHealth) && !late.ClosedByServer());
}

TEST(HttpServer, ASecondServerOnAUsedPortFails) {
  Served s(SmallLimits());
  Options o;
  o.port = s.port();
  Server second(o);
  const Status st = second.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("Address already in use"), std::string::npos) << st.reason();
  EXPECT_NE(st.reason().find(std::to_string(s.port())), std::string::npos) << st.reason();
}

TEST(HttpServer, AHandlerThatThrowsIsAnswered500) {
  struct Case {
    const char* name;
    ExceptionHandler on_exception;
    std::string want_body;
  };
  const Case cases[] = {
      {"default", nullptr, "internal error: broken handler\n"},
      {"the owner's handler",
       [](const Request& q, Response& r, std::exception_ptr ep) {
         r.Set(q.path + " " + Classify(ep).reason, "text/plain");
       },
       "/throw exception"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    Options o;
    o.on_exception = tc.on_exception;
    Served s(SmallLimits(), o);
    RawClient c(s.port());
    c.Send(Post("/throw", "x"));
    const std::string got = c.ReadResponses(1);
    EXPECT_EQ(StatusLine(got), "HTTP/1.1 500 Internal Server Error");
    EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), tc.want_body);
  }
}

TEST(HttpServer, RequiresAClientCertificateWhenGivenAClientCa) {
  testing::TempDir dir;
  const auto pki = testing::MakeTestPki(dir);
  Options o;
  o.tls_cert_file = pki.server_cert_file;
  o.tls_key_file = pki.server_key_file;
  o.tls_client_ca_file = pki.ca_file;
  Served s(SmallLimits(), o);
  struct Case {
    const char* name;
    std::string cert, key;
    bool want_answer;
  };
  const Case cases[] = {
      {"with the client certificate", pki.client_cert_file, pki.client_key_file, true},
      {"without one", "", "", false},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::unique_ptr<httplib::SSLClient> cli =
        tc.cert.empty()
            ? std::make_unique<httplib::SSLClient>("127.0.0.1", s.port())
            : std::make_unique<httplib::SSLClient>("127.0.0.1", s.port(), tc.cert, tc.key);
    cli->set_ca_cert_path(pki.ca_file.c_str());
    cli->enable_server_certificate_verification(true);
    auto r = cli->Get("/health");
    EXPECT_EQ(r && r->status == 200, tc.want_answer);
  }
  // With TLS 1.3 the client may see its request fail before the server's handshake
  // handler has counted the refusal: wait for it.
  EXPECT_TRUE(Eventually([&] { return s.server->counters().tls_handshake_failures >= 1u; }));

  Options half;
  half.tls_client_ca_file = pki.ca_file;
  Server plain_with_ca(half);
  const Status st = plain_with_ca.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("over HTTPS only"), std::string::npos) << st.reason();
}

}  // namespace
}  // namespace tidal::http
