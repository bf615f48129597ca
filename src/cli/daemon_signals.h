#pragma once
// How the long-running commands (serve, agent, device plugin, rebalance) take
// signals: SIGINT and SIGTERM synchronously by the main thread, SIGPIPE never.
#include <pthread.h>

#include <csignal>

namespace tidal::cli {

// A peer that closed a connection fails the write (EPIPE) instead of ending the
// process: OpenSSL writes to its sockets without MSG_NOSIGNAL, and a TLS
// connection the API server had closed killed tidal serve with SIGPIPE.
inline void IgnoreBrokenPipes() { std::signal(SIGPIPE, SIG_IGN); }

// Blocks SIGINT and SIGTERM (call it before any thread starts, so that every
// thread inherits the mask) and ignores SIGPIPE; returns the set to wait on.
inline sigset_t TakeStopSignals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  IgnoreBrokenPipes();
  return sigs;
}

}  // namespace tidal::cli
