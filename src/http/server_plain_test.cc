// tidal::http_plain, the server tidal-agent links: the same server without HTTPS.
// It serves plain HTTP, and a certificate is refused at start, naming it, rather
// than served over plain HTTP.
#include <gtest/gtest.h>
#include <httplib.h>

#include "tidal/http/server.h"

namespace tidal::http {
namespace {

TEST(HttpPlainServer, ServesHttpAndRefusesACertificate) {
  Options o;
  o.port = 0;
  Server server(o);
  server.Route("GET", "/health", [](const Request&, Response& r) { r.Set("ok\n", "text/plain"); });
  ASSERT_TRUE(server.Start().ok());
  httplib::Client client("127.0.0.1", server.port());
  const auto r = client.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  server.Stop();

  Options tls;
  tls.tls_cert_file = "/etc/tidal/cert.pem";
  tls.tls_key_file = "/etc/tidal/key.pem";
  Server refused(tls);
  const Status st = refused.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("plain HTTP only (--tls-cert /etc/tidal/cert.pem)"), std::string::npos)
      << st.reason();
}

}  // namespace
}  // namespace tidal::http
