// SPDX-License-Identifier: GPL-3.0-or-later
// Reading profiled spans back from Chrome trace JSON as chrome_trace_json
// writes it (`renaissance-cli train --trace`): pid is the rank, tid the
// stream, args name the graph, node and step (a trace without steps, written
// before spans knew them, loads with step -1). Other tools' traces load as far as
// they fit that shape; anything that does not is refused with its reason.
#pragma once

#include <QByteArray>
#include <QString>
#include <vector>

#include <renaissance/profile.h>

namespace tr::gui {

// `source` names the file in messages. False with `error` set on bad input.
bool parse_chrome_trace(const QByteArray& json, const QString& source,
                        std::vector<ProfileSpan>& spans, QString* error);
bool read_chrome_trace(const QString& path, std::vector<ProfileSpan>& spans, QString* error);

}  // namespace tr::gui
