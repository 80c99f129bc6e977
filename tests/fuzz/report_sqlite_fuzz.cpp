// SPDX-License-Identifier: Apache-2.0
// `pyebpf report FILE.sqlite`'s reader on databases a hostile or damaged file
// can be: each input is SQL run against a real pyebpf database (the events of
// a real run, written by SqliteStore) before SqliteStore and record_from_json
// read it back, so they meet any schema, column type and value SQLite stores.
// Raw file bytes are the JSON-lines target's job (inputs with SQLite's magic).
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "app/registry.hpp"
#include "pyebpf/error.hpp"
#include "sinks/record_input.hpp"
#include "sinks/sqlite_store.hpp"
#include "stored_report.hpp"

using namespace pyebpf;

#ifndef PYEBPF_FUZZ_BASE_EVENTS
#error "PYEBPF_FUZZ_BASE_EVENTS must name a JSON-lines file of pyebpf events"
#endif

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Workspace {
  std::string dir;
  std::string db;    // the database each input builds and the report reads
  std::string base;  // its starting bytes: one finished run of real events

  Workspace() {
    // In memory (tmpfs): every input writes the file twice.
    char name[] = "/dev/shm/pyebpf-report-fuzz.XXXXXX";
    if (!mkdtemp(name)) std::abort();
    dir = name;
    db = dir + "/run.sqlite";
    {
      sinks::SqliteStore store(db, sinks::SqliteStore::Mode::Write);
      long run = store.begin_run({"fuzz", "host", "0.1.0", "pyebpf -p 4242 -e fuzz --sqlite x", {4242}, 1});
      std::ifstream events(PYEBPF_FUZZ_BASE_EVENTS);
      std::string line;
      store.begin();
      while (std::getline(events, line)) {
        auto e = nlohmann::ordered_json::parse(line);
        sinks::Record r(*app::schema_for_metric(e.at("metric").get<std::string>()));
        sinks::record_from_json(e, r);
        store.insert(run, r);
      }
      store.commit();
      store.end_run(run, {2000000, 2.0, "duration elapsed", {"py_stack: 99 samples", "lost 0 events"}});
    }
    base = slurp(db);
    if (base.empty()) std::abort();
  }
  ~Workspace() {
    remove_db();
    ::rmdir(dir.c_str());
  }
  void remove_db() const {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((db + suffix).c_str());
  }
};

// The SQL of an input may not reach outside the one file (ATTACH, VACUUM
// INTO) nor change how SQLite stores it (PRAGMA).
int authorize(void*, int action, const char*, const char*, const char*, const char*) {
  return action == SQLITE_ATTACH || action == SQLITE_DETACH || action == SQLITE_PRAGMA ? SQLITE_DENY : SQLITE_OK;
}

// Bounds the work (and so the database size) one input's SQL can do.
int budget(void* steps) {
  return ++*static_cast<int*>(steps) > 2000;
}

void build(const Workspace& ws, const std::string& sql) {
  ws.remove_db();
  {
    std::ofstream out(ws.db, std::ios::binary);
    out << ws.base;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(ws.db.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) std::abort();
  sqlite3_exec(db, "PRAGMA synchronous = OFF", nullptr, nullptr, nullptr);  // no fsync: the file is scratch
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_set_authorizer(db, authorize, nullptr);
  int steps = 0;
  sqlite3_progress_handler(db, 1000, budget, &steps);
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);  // errors are fine: what did run, stays
  sqlite3_close(db);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Workspace ws;
  build(ws, std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)fuzz::sqlite_report(ws.db);
  } catch (const Error&) {
  }
  return 0;
}
