// SPDX-License-Identifier: GPL-3.0-or-later
// An SQLite VFS that wraps the system's and makes writes and syncs fail on
// request, the way SQLite tests itself: registered as the default, it is
// what every connection of the process opens files through (the run store's
// too), until it is unregistered. Armed with fail_after(n, count), the
// (n+1)th write-or-sync call (or sync only) from then on and the `count`
// after it fail with SQLITE_FULL (writes) or SQLITE_IOERR_FSYNC (syncs);
// heal() ends it.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tr::test {

class FaultyVfs {
 public:
  FaultyVfs() {
    real_ = sqlite3_vfs_find(nullptr);
    vfs_ = *real_;
    vfs_.zName = "tr_faulty";
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
    vfs_.pAppData = this;
    vfs_.xOpen = &FaultyVfs::open;
    sqlite3_vfs_register(&vfs_, 1);
    instance() = this;
  }
  FaultyVfs(const FaultyVfs&) = delete;
  FaultyVfs& operator=(const FaultyVfs&) = delete;
  ~FaultyVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(real_, 1);
    instance() = nullptr;
  }

  enum class Calls { WritesAndSyncs, Syncs };
  // From now, `calls` write or sync calls (or syncs only) go through, then `count` fail.
  void fail_after(int64_t calls, int64_t count = std::numeric_limits<int64_t>::max(),
                  Calls which = Calls::WritesAndSyncs) {
    syncs_only_ = which == Calls::Syncs;
    left_ = calls;
    failing_ = count;
  }
  void heal() { left_ = std::numeric_limits<int64_t>::max(); }
  int64_t failures() const { return failures_; }
  int64_t calls() const { return calls_; }

 private:
  struct File {
    sqlite3_file base;
    sqlite3_file* real;  // the wrapped file, right after this struct
  };

  static FaultyVfs*& instance() {
    static FaultyVfs* v = nullptr;
    return v;
  }

  // True when this call is one that fails.
  static bool fault(bool sync) {
    FaultyVfs* v = instance();
    if (!v || (v->syncs_only_ && !sync)) return false;
    ++v->calls_;
    if (v->left_.fetch_sub(1) > 0) return false;
    if (v->failing_.fetch_sub(1) <= 0) {
      v->heal();
      return false;
    }
    ++v->failures_;
    return true;
  }

  static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }

  static int open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out) {
    auto* self = static_cast<FaultyVfs*>(vfs->pAppData);
    File* f = reinterpret_cast<File*>(file);
    f->real = reinterpret_cast<sqlite3_file*>(f + 1);
    std::memset(f->real, 0, static_cast<size_t>(self->real_->szOsFile));
    const int rc = self->real_->xOpen(self->real_, name, f->real, flags, out);
    f->base.pMethods = f->real->pMethods ? &methods() : nullptr;
    return rc;
  }

  static const sqlite3_io_methods& methods() {
    static const sqlite3_io_methods m = {
        3,
        [](sqlite3_file* f) {
          const int rc = real(f)->pMethods->xClose(real(f));
          f->pMethods = nullptr;
          return rc;
        },
        [](sqlite3_file* f, void* p, int n, sqlite3_int64 o) {
          return real(f)->pMethods->xRead(real(f), p, n, o);
        },
        [](sqlite3_file* f, const void* p, int n, sqlite3_int64 o) {
          return fault(false) ? SQLITE_FULL : real(f)->pMethods->xWrite(real(f), p, n, o);
        },
        [](sqlite3_file* f, sqlite3_int64 size) {
          return real(f)->pMethods->xTruncate(real(f), size);
        },
        [](sqlite3_file* f, int flags) {
          return fault(true) ? SQLITE_IOERR_FSYNC : real(f)->pMethods->xSync(real(f), flags);
        },
        [](sqlite3_file* f, sqlite3_int64* size) {
          return real(f)->pMethods->xFileSize(real(f), size);
        },
        [](sqlite3_file* f, int lock) { return real(f)->pMethods->xLock(real(f), lock); },
        [](sqlite3_file* f, int lock) { return real(f)->pMethods->xUnlock(real(f), lock); },
        [](sqlite3_file* f, int* out) {
          return real(f)->pMethods->xCheckReservedLock(real(f), out);
        },
        [](sqlite3_file* f, int op, void* arg) {
          return real(f)->pMethods->xFileControl(real(f), op, arg);
        },
        [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); },
        [](sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); },
        [](sqlite3_file* f, int page, int size, int extend, void volatile** out) {
          return real(f)->pMethods->xShmMap(real(f), page, size, extend, out);
        },
        [](sqlite3_file* f, int offset, int n, int flags) {
          return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
        },
        [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); },
        [](sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); },
        [](sqlite3_file* f, sqlite3_int64 o, int n, void** out) {
          return real(f)->pMethods->xFetch(real(f), o, n, out);
        },
        [](sqlite3_file* f, sqlite3_int64 o, void* p) {
          return real(f)->pMethods->xUnfetch(real(f), o, p);
        },
    };
    return m;
  }

  sqlite3_vfs* real_ = nullptr;
  sqlite3_vfs vfs_{};
  std::atomic<int64_t> left_{std::numeric_limits<int64_t>::max()};
  std::atomic<int64_t> failing_{0};
  std::atomic<int64_t> failures_{0};
  std::atomic<int64_t> calls_{0};
  std::atomic<bool> syncs_only_{false};
};

}  // namespace tr::test
