#include "jr2/pool_lines.h"

namespace jr2rt {

void AppendItemMark(std::string& out, std::string_view item, std::string_view pool) {
  out += "{\"item\":";
  AppendJsonString(out, item);
  out += ",\"pool\":";
  AppendJsonString(out, pool);
  out += '}';
}

Json TopMarkData(std::string item) { return {{"item", std::move(item)}, {"pool", ""}}; }

Json TopAnswerData(Json answer) {
  return {{"answer", std::move(answer)}, {"call", "next"}, {"pool", ""}};
}

namespace {

// `text` as a store gives it back once written (AppendJsonString) and read: the bytes that are not
// UTF-8 replaced, as a dump replaces them.
std::string AsReadBack(std::string_view text) {
  std::string quoted;
  if (AppendUtf8String(quoted, text)) return std::string(text);
  AppendJsonString(quoted, text);
  return Json::parse(quoted).get<std::string>();
}

}  // namespace

Json FeedFormData(FeedForm form, const std::string& kind, const std::string& line, const Json& data,
                  const std::string& dataText) {
  // What a store reads back (rows.cpp): the short forms made whole by the same two makers.
  switch (form) {
    case FeedForm::kTopMark:
      return TopMarkData(AsReadBack(MarkItem(line, kind)));
    case FeedForm::kTopAnswer:
      return TopAnswerData(Json::parse(dataText));
    case FeedForm::kWhole:
      break;
  }
  return dataText.empty() ? data : Json::parse(dataText);
}

void AppendFeedFormData(std::string& out, FeedForm form, const std::string& kind,
                        const std::string& line, const Json& data, const std::string& dataText) {
  switch (form) {
    case FeedForm::kTopMark:
      return AppendItemMark(out, MarkItem(line, kind), "");
    case FeedForm::kTopAnswer:
      out += "{\"answer\":";
      out += dataText;
      out += ",\"call\":\"next\",\"pool\":\"\"}";
      return;
    case FeedForm::kWhole:
      break;
  }
  if (dataText.empty()) {
    AppendJson(out, data);
  } else {
    out += dataText;
  }
}

bool ReadJournalEntry(const Json& e, JournalEntry& out) {
  if (!e.is_object() || e.size() != 2) return false;
  const auto settled = e.find("settled");
  if (settled != e.end()) {
    const auto output = e.find("output");
    if (!settled->is_string() || output == e.end()) return false;
    out = {false, &settled->get_ref<const std::string&>(), &*output};
    return true;
  }
  const auto failed = e.find("failed");
  const auto failure = e.find("failure");
  if (failed == e.end() || !failed->is_string() || failure == e.end() || !failure->is_object()) {
    return false;
  }
  const auto reason = failure->find("reason");
  if (reason == failure->end() || !reason->is_string()) return false;
  out = {true, &failed->get_ref<const std::string&>(), &*failure};
  return true;
}

}  // namespace jr2rt
