// SPDX-License-Identifier: GPL-3.0-or-later
#include "store/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace tr::store {

SqliteDb::SqliteDb(const std::string& path, int flags) : path_(path) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open the run store '" + path + "': " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
}

SqliteDb::SqliteDb(SqliteDb&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)) {}

SqliteDb& SqliteDb::operator=(SqliteDb&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = std::exchange(o.db_, nullptr);
    path_ = std::move(o.path_);
  }
  return *this;
}

SqliteDb::~SqliteDb() {
  sqlite3_close(db_);
}

void SqliteDb::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw StoreError("run store '" + path_ + "': " + msg);
  }
}

void SqliteDb::fail(std::string_view what) const {
  throw StoreError("run store '" + path_ + "': " + std::string(what) + ": " + sqlite3_errmsg(db_));
}

Statement::Statement(const SqliteDb& db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr) != SQLITE_OK)
    db.fail("cannot prepare a query");
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, int64_t v) {
  if (sqlite3_bind_int64(stmt_, index, v) != SQLITE_OK) db_.fail("cannot bind a value");
  return *this;
}

Statement& Statement::bind(int index, double v) {
  if (sqlite3_bind_double(stmt_, index, v) != SQLITE_OK) db_.fail("cannot bind a value");
  return *this;
}

Statement& Statement::bind(int index, std::string_view v) {
  if (sqlite3_bind_text64(stmt_, index, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8) !=
      SQLITE_OK)
    db_.fail("cannot bind a value");
  return *this;
}

Statement& Statement::bind(int index, const std::optional<double>& v) {
  return v ? bind(index, *v) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) db_.fail("cannot bind a value");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("query failed");
}

void Statement::run() {
  while (step()) {
  }
  sqlite3_reset(stmt_);  // finished, and no longer holding anything open
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::optional<double> Statement::optional_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

std::string Statement::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

Transaction::Transaction(SqliteDb& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace tr::store
