#pragma once
// Test certificates made at run time with OpenSSL: a CA and a server
// certificate it signs for 127.0.0.1 and localhost, written as PEM files.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>

#include "testing/process.h"

namespace tidal::testing {

struct TestPki {
  std::string ca_pem, server_cert_pem, server_key_pem;
  std::string ca_file, server_cert_file, server_key_file;
  // A client certificate the same CA signed (mutual TLS).
  std::string client_cert_file, client_key_file;
};

namespace tls_detail {
inline EVP_PKEY* NewKey() {
  EVP_PKEY* key = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr);
  EVP_PKEY_keygen_init(ctx);
  EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1);
  EVP_PKEY_keygen(ctx, &key);
  EVP_PKEY_CTX_free(ctx);
  return key;
}
inline void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}
inline X509* NewCert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, long serial,
                     const char* usage = "serverAuth") {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
  if (!issuer) {
    AddExt(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExt(cert, issuer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    AddExt(cert, issuer, NID_ext_key_usage, usage);
  }
  X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256());
  return cert;
}
inline std::string Pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}
inline std::string Pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}
}  // namespace tls_detail

// A CA and a server and a client certificate signed by it, written under `dir`.
inline TestPki MakeTestPki(const TempDir& dir, const std::string& prefix = "") {
  using namespace tls_detail;
  EVP_PKEY* ca_key = NewKey();
  X509* ca = NewCert(ca_key, "tidal-test-ca", nullptr, nullptr, 1);
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(key, "127.0.0.1", ca, ca_key, 2);
  TestPki p;
  p.ca_pem = Pem(ca);
  p.server_cert_pem = Pem(cert);
  p.server_key_pem = Pem(key);
  p.ca_file = dir.Write(prefix + "ca.crt", p.ca_pem);
  p.server_cert_file = dir.Write(prefix + "server.crt", p.server_cert_pem);
  p.server_key_file = dir.Write(prefix + "server.key", p.server_key_pem);
  EVP_PKEY* client_key = NewKey();
  X509* client = NewCert(client_key, "tidal-test-client", ca, ca_key, 3, "clientAuth");
  p.client_cert_file = dir.Write(prefix + "client.crt", Pem(client));
  p.client_key_file = dir.Write(prefix + "client.key", Pem(client_key));
  X509_free(client);
  EVP_PKEY_free(client_key);
  X509_free(cert);
  X509_free(ca);
  EVP_PKEY_free(key);
  EVP_PKEY_free(ca_key);
  return p;
}

}  // namespace tidal::testing
