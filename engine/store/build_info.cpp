// SPDX-License-Identifier: GPL-3.0-or-later
#include "store/build_info.h"

#include "tr_build_info.h"

namespace tr::store {

std::string_view engine_version() noexcept {
  return TR_VERSION;
}

std::string_view engine_git_commit() noexcept {
  return TR_GIT_COMMIT;
}

}  // namespace tr::store
