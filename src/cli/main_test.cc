// The entry points of tidal and tidal-agent: --version, --help and the exit
// code of a usage error, run as a user would.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <regex>
#include <string>

#include "cli/version.h"
#include "testing/process.h"
#include "testing/run_command.h"

namespace tidal {
namespace {

using namespace tidal::testing;

struct Program {
  const char* name;
  const char* path;
};
const Program kPrograms[] = {{"tidal", TIDAL_BINARY}, {"tidal-agent", TIDAL_AGENT_BINARY}};

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Whether the revision is what `git describe` said of a commit of this
// checkout (a later commit or edit does not make it wrong: it names the commit
// built), or empty because git could not describe it (no git, another owner).
void ExpectRevisionOfThisCheckout(const std::string& revision) {
  const std::string git = "-C \"" + Source("") + "\" ";
  if (revision.empty()) {
    EXPECT_NE(RunBinary("git", git + "describe --always").exit_code, 0)
        << "git describes this checkout, the build did not";
    return;
  }
  ASSERT_TRUE(std::regex_match(revision, std::regex("[0-9A-Za-z._/+-]+"))) << revision;
  const std::string commit = std::regex_replace(revision, std::regex("-dirty$"), "");
  EXPECT_EQ(
      RunBinary("git", git + "rev-parse --verify --quiet \"" + commit + "^{commit}\"").exit_code, 0)
      << revision << " names no commit of this checkout";
}

TEST(Version, BothProgramsPrintTheReleaseAndTheRevision) {
  const BuildInfo build = cli::TidalBuild();
  EXPECT_EQ(build.version, FirstLine(ReadFile(Source("VERSION"))));
  if (std::filesystem::exists(Source(".git"))) ExpectRevisionOfThisCheckout(build.revision);
  for (const Program& p : kPrograms) {
    SCOPED_TRACE(p.name);
    const CommandResult r = RunBinary(p.path, "--version");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, cli::VersionLine(p.name, build) + "\n");
  }
}

TEST(Version, LineLeavesOutAMissingRevision) {
  struct Case {
    const char* name;
    BuildInfo build;
    const char* want;
  };
  const Case cases[] = {
      {"a checkout", {"0.1.0", "v0.1.0-3-g88583e7-dirty"}, "tidal 0.1.0 (v0.1.0-3-g88583e7-dirty)"},
      {"a source archive", {"0.1.0", ""}, "tidal 0.1.0"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(cli::VersionLine("tidal", tc.build), tc.want);
  }
}

// Runs cmake/TidalVersion.cmake on the tree `src`; returns the file it wrote.
std::string GenerateVersion(const TempDir& dir, const std::string& src) {
  const std::string out = dir.path() + "/version.cc";
  const CommandResult r = RunBinary(TIDAL_CMAKE,
                                    "-DSOURCE_DIR=\"" + src + "\" -DOUTPUT=\"" + out + "\" -P \"" +
                                        Source("cmake/TidalVersion.cmake") + "\"",
                                    true);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return ReadFile(out);
}

// The script on a tree of its own, as it changes: VERSION alone (a source
// archive), a tagged commit, a later commit with an uncommitted edit.
TEST(Version, ScriptReadsVersionAndDescribesACheckout) {
  TempDir dir;
  const std::string src = dir.path() + "/src";
  dir.Write("src/VERSION", "9.8.7\n");
  dir.Write("src/notes", "one");
  const auto git = [&](const std::string& args) {
    const CommandResult r =
        RunBinary("git",
                  "-C \"" + src + "\" -c user.name=t -c user.email=t@example.com " +
                      "-c init.defaultBranch=main -c commit.gpgsign=false " + args,
                  true);
    ASSERT_EQ(r.exit_code, 0) << args << ": " << r.out;
  };

  EXPECT_NE(GenerateVersion(dir, src).find(R"({"9.8.7", ""})"), std::string::npos);

  git("init -q");
  git("add -A");
  git("commit -q -m one");
  git("tag v9.8.7");
  EXPECT_NE(GenerateVersion(dir, src).find(R"({"9.8.7", "v9.8.7"})"), std::string::npos);

  dir.Write("src/notes", "two");
  git("commit -q -a -m two");
  dir.Write("src/notes", "an edit");
  const std::string text = GenerateVersion(dir, src);
  EXPECT_TRUE(
      std::regex_search(text, std::regex(R"(\{"9\.8\.7", "v9\.8\.7-1-g[0-9a-f]+-dirty"\})")))
      << text;
}

TEST(Version, ScriptRefusesAVersionFileThatIsNotAVersion) {
  TempDir dir;
  dir.Write("src/VERSION", "not a version\n");
  const CommandResult r =
      RunBinary(TIDAL_CMAKE,
                "-DSOURCE_DIR=\"" + dir.path() + "/src\" -DOUTPUT=\"" + dir.path() +
                    "/version.cc\" -P \"" + Source("cmake/TidalVersion.cmake") + "\"",
                true);
  EXPECT_NE(r.exit_code, 0);
  // CMake wraps its messages: compare with the line breaks taken out.
  const std::string message = std::regex_replace(r.out, std::regex("\\s+"), " ");
  EXPECT_NE(message.find("VERSION: \"not a version\" (expected a version such as 0.1.0)"),
            std::string::npos)
      << r.out;
}

// The release each service runs, for Prometheus: tidal serve's /metrics and the
// agent's exposition (the same text its /metrics serves).
TEST(BuildInfo, BothServicesExportIt) {
  const BuildInfo build = cli::TidalBuild();
  const std::string want =
      "tidal_build_info{version=\"" + build.version + "\",revision=\"" + build.revision + "\"} 1\n";
  TempDir dir;
  struct Case {
    const char* name;
    std::function<std::string()> exposition;
  };
  const Case cases[] = {
      {"tidal serve",
       [&] {
         // Prometheus unreachable: the extender serves its fallback, and /metrics.
         const int port = FreePort();
         Child serve({TIDAL_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port),
                      "--prometheus", "http://127.0.0.1:1"},
                     {}, "", dir.path() + "/serve.log");
         httplib::Client client("127.0.0.1", port);
         std::string text;
         Eventually([&] {
           const auto res = client.Get("/metrics");
           if (res && res->status == 200) text = res->body;
           return !text.empty();
         });
         return text;
       }},
      {"tidal-agent --once",
       [] { return RunBinary(TIDAL_AGENT_BINARY, "--once --node-name n1 --interval 100ms").out; }},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::string text = tc.exposition();
    EXPECT_NE(text.find("# TYPE tidal_build_info gauge\n" + want), std::string::npos) << text;
  }
}

// CLI11's own codes (100 and up) differ by the kind of mistake; the documented
// code is 2.
TEST(ExitCode, UsageErrorsExit2) {
  struct Case {
    const char* name;
    const char* program;
    std::string args;
    const char* want;
  };
  const Case cases[] = {
      {"no subcommand", TIDAL_BINARY, "", "expected a subcommand: explain, check-config,"},
      {"an unknown subcommand", TIDAL_BINARY, "frobnicate",
       "The following argument was not expected: frobnicate"},
      {"an unknown flag", TIDAL_BINARY, "check-config --bogus x", "--bogus"},
      {"a value of the wrong type", TIDAL_BINARY, "simulate --seed many", "--seed"},
      {"tidal-agent: an unknown flag", TIDAL_AGENT_BINARY, "--bogus", "--bogus"},
      {"tidal-agent: a value out of range", TIDAL_AGENT_BINARY, "--once --nvlink-slots 0",
       "--nvlink-slots"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunBinary(tc.program, tc.args, true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(tc.want), std::string::npos) << r.out;
  }
}

TEST(ExitCode, HelpExits0) {
  struct Case {
    const char* name;
    const char* program;
    const char* args;
  };
  const Case cases[] = {
      {"tidal", TIDAL_BINARY, "--help"},
      {"a subcommand", TIDAL_BINARY, "explain --help"},
      {"tidal-agent", TIDAL_AGENT_BINARY, "--help"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunBinary(tc.program, tc.args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
  }
}

// A file argument that is a directory, a FIFO, a device or far too large is an
// error naming the path and what was expected, with the README's exit code for
// an unreadable input (2; check-config's own 1): never an abort, a read that
// does not end, or a wait for a FIFO's writer.
TEST(FileArguments, WhatIsNotARegularFileIsAClearError) {
  const TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string folder = dir.path() + "/folder";
  std::filesystem::create_directory(folder);
  struct Case {
    const char* name;
    std::string args, path, expected;
    int exit_code = 2;
  };
  const Case cases[] = {
      {"check-config: a directory", "check-config " + folder, folder,
       "is a directory, expected a regular file", 1},
      {"check-config: a FIFO", "check-config " + fifo, fifo, "is a FIFO, expected a regular file",
       1},
      {"simulate --cluster: a directory", "simulate --cluster " + folder, folder,
       "is a directory, expected a regular file"},
      {"simulate --workload: /dev/zero", "simulate --workload /dev/zero", "/dev/zero",
       "is a character device, expected a regular file"},
      {"explain --pod: /dev/zero",
       "explain --pod /dev/zero --nodes " + Source("examples/explain/nodes.yaml"), "/dev/zero",
       "is a character device, expected a regular file"},
      {"simulate --config: a directory", "simulate --config " + folder, folder,
       "is a directory, expected a regular file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CommandResult r = RunTidal(c.args, true);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.out;
    EXPECT_NE(r.out.find(c.path + ": " + c.expected), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal
