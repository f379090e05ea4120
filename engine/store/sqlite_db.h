// SPDX-License-Identifier: GPL-3.0-or-later
// Thin RAII owners for an SQLite connection, a prepared statement and a
// write transaction. Values only ever reach SQL through bind(), never by
// pasting text into a query.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <renaissance/run_records.h>

struct sqlite3;
struct sqlite3_stmt;

namespace tr::store {

class SqliteDb {
 public:
  SqliteDb() = default;
  // Opens `path` with sqlite3_open_v2 `flags`; throws StoreError.
  SqliteDb(const std::string& path, int flags);
  SqliteDb(SqliteDb&& o) noexcept;
  SqliteDb& operator=(SqliteDb&& o) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();

  sqlite3* handle() const noexcept { return db_; }
  const std::string& path() const noexcept { return path_; }
  // Runs fixed SQL text (schema scripts, pragmas without values).
  void exec(const char* sql);
  // The StoreError for a failed call: "<path>: <what>: <sqlite's message>".
  [[noreturn]] void fail(std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(const SqliteDb& db, const char* sql);
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQL's ?1.
  Statement& bind(int index, int64_t v);
  Statement& bind(int index, double v);
  Statement& bind(int index, std::string_view v);
  Statement& bind(int index, const std::optional<double>& v);
  Statement& bind_null(int index);

  // true while a row is available; false when done.
  bool step();
  // step() for statements that return no rows.
  void run();
  // Clears bindings and rewinds, for reuse in a loop.
  void reset();

  bool is_null(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::optional<double> optional_real(int column) const;
  std::string text(int column) const;

 private:
  const SqliteDb& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when left without commit().
// IMMEDIATE takes the write lock up front, so a busy writer is waited for
// (busy timeout) instead of failing halfway through the transaction.
class Transaction {
 public:
  explicit Transaction(SqliteDb& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  SqliteDb& db_;
  bool open_ = true;
};

}  // namespace tr::store
