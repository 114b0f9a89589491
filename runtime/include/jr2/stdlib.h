// The standard library's Sources and effects (RUNTIME.md §5), so samples need no C++.
#pragma once

#include "jr2/registry.h"
#include "jr2/value.h"

namespace jr2rt {

// `std.backlog(path)`: re-reads the JSON file at each call and gives the first item in file
// order that is neither active nor settled and whose `needs` all finished without a Failure,
// with `open` the items left that are not ready. A missing or invalid file is a defect naming
// the path and the parse error (a `next` that fails is the run's error, not an item's).
Json StdBacklog(const Json& args, const NextQuery& query);

// `std.queue(list)`: the items of a list in order, skipping those active or settled (an item's
// id is its `id` field, or the item itself when it is a string).
Json StdQueue(const Json& args, const NextQuery& query);

// `std.command({ argv, cwd, timeout })` → `{ exit, stdout, stderr }`; a non-zero exit or a
// timeout is a Failure. `std.http_get({ url, timeout })` → the JSON body of a GET.
Json StdEffect(const std::string& name, const Json& args);

// `std.http_get({ url, timeout })`: GETs an http:// URL (redirects followed, up to 5) and gives
// its body as JSON. A status other than 2xx, a body that is not JSON, no answer within
// `timeout` (30 s by default), a URL it cannot reach, or an https:// URL (no TLS here) is a
// Failure whose detail holds the url, and the status and body when there was an answer.
Json HttpGet(const Json& request);

}  // namespace jr2rt
