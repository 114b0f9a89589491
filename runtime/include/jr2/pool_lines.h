// The text a Pool tells and keeps, decided in one place below the layers that make it (run) and
// store it (store): the forms of the feed lines it tells of each item, and what an entry of its
// journal says (#33).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "jr2/value.h"

namespace jr2rt {

// A Pool's per-item mark's data, `{"item": item, "pool": pool}`, appended as the text a dump of
// that object writes: one place for a top Pool's short mark (FeedForm) and a nested Pool's.
void AppendItemMark(std::string& out, std::string_view item, std::string_view pool);

// How a feed event gives its data: `kWhole`, as JSON (`data`) or as its JSON text (`dataText`);
// or, for the lines a top Pool tells of each of its items, nothing built as they are told, the
// data made from the line when someone reads it:
//   kTopMark    kind `started` or `settled`, line `<item> <kind>`; data {"item": item, "pool": ""}
//   kTopAnswer  kind `source`, no line, `dataText` the JSON text of an answer A of the Pool's
//               `next` (an object or array); data {"answer": A, "call": "next", "pool": ""}
// The store writes them short as they are (store/rows.h FeedRows) and reads them back whole.
enum class FeedForm : unsigned char { kWhole, kTopMark, kTopAnswer };
// A feed line's data, whatever its form: `data`, or `dataText` parsed, or made from its line.
Json FeedFormData(FeedForm form, const std::string& kind, const std::string& line, const Json& data,
                  const std::string& dataText);
// The same as JSON text, appended to `out` (AppendJson's bytes for FeedFormData's value).
void AppendFeedFormData(std::string& out, FeedForm form, const std::string& kind,
                        const std::string& line, const Json& data, const std::string& dataText);
// The data of a kTopMark line of `item` and of a kTopAnswer of `answer`, as JSON: what a store
// gives back for the short rows it wrote (the same members AppendFeedFormData writes as text).
Json TopMarkData(std::string item);
Json TopAnswerData(Json answer);
// The item of a kTopMark line: `line` without ` <kind>`.
inline std::string_view MarkItem(const std::string& line, const std::string& kind) {
  return std::string_view(line).substr(0, line.size() - std::min(line.size(), kind.size() + 1));
}

// One entry of a Pool's journal, as the store gives it back (store/rows.h reads the short forms
// it writes into these): an item settled, `{"output": O, "settled": id}`, or failed,
// `{"failed": id, "failure": {"reason": text, …}}`. Its pointers are into the entry.
struct JournalEntry {
  bool failed = false;
  const std::string* item = nullptr;
  const Json* value = nullptr;  // the output, or the failure
};
// `e` read as an entry; false when it is neither form (another member, a wrong type): damage,
// which the restore refuses and a view leaves out.
bool ReadJournalEntry(const Json& e, JournalEntry& out);

}  // namespace jr2rt
