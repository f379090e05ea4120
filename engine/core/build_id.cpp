// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/build_id.h"

#include "tr_build_info.h"

namespace tr {

std::string engine_build_id() {
  return std::string(TR_VERSION) + "+" + TR_GIT_COMMIT;
}

}  // namespace tr
