// What the verbs show of a run (views.h): made here once, from a hosted run or at each save.
#include "jr2/views.h"

#include <link.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "core/pieces.h"
#include "jr2/host.h"
#include "store/rows.h"

namespace jr2rt {

namespace {

// `{held, keys}` as counts: the held items and live runs a standing Pool keeps.
Json HoldCounts(const Json& state) {
  if (!state.is_object()) return nullptr;
  return {{"held", state.value("held", Json::array()).size()},
          {"keys", state.value("keys", Json::object()).size()}};
}

// The `.note.gnu.build-id` of the executable, read from its program headers as they are mapped.
int FindBuildId(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* out = static_cast<std::string*>(data);
  // The first object is the executable itself; a shared library's id is not the build's.
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    // The loader gives the object's base as an integer: the one way to its mapped notes.
    const char* p = reinterpret_cast<const char*>(  // NOLINT(performance-no-int-to-ptr)
        info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3U);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::string(name, 3) == "GNU" &&
          desc + note->n_descsz <= end) {
        char hex[3];
        for (size_t k = 0; k < note->n_descsz; ++k) {
          std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(desc[k]));
          *out += hex;
        }
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3U);
    }
  }
  return 1;  // only the executable is looked at
}

}  // namespace

const std::string& BuildId() {
  static const std::string kId = [] {
    std::string out;
    dl_iterate_phdr(FindBuildId, &out);
    return out;
  }();
  return kId;
}

namespace {

// What a Gate shows of the events it accepts (names, Menu, fields) depends on those events and
// its kind alone: made once per such set, not at every save (a Menu parses each event's schema).
struct Accepted {
  std::string key;  // the kind, the events' names and a hash of all the Menu is made from
  std::vector<EventSpec> events;  // what it was made from
  Json names;
  Json menu;
  std::string menuText;   // `menu` as text: a view copies it, never the JSON (ViewText)
  std::string namesText;  // `names` as text
  Json fields;
  std::map<std::string, std::string> fieldsText;  // each of `fields` as text, by event
};

// FNV-1a over every part of the events a Menu and the fields are made from: two events of one
// name (`approve` of two modules, or of two programs in one process) with other fields, audience
// or description make two Menus.
uint64_t EventsHash(const std::vector<EventSpec>& events) {
  uint64_t h = 1469598103934665603ULL;
  auto add = [&](std::string_view text) {
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    h ^= 0xff;  // a separator no text holds, so ("ab", "c") and ("a", "bc") differ
    h *= 1099511628211ULL;
  };
  for (const auto& e : events) {
    add(e.name);
    add(std::to_string(static_cast<int>(e.audience)));
    add(e.description);
    add(e.schema);
    for (const auto& f : e.fields) {
      add(f.name);
      add(f.type);
      add(f.required ? "1" : "0");
      add(f.description);
    }
  }
  return h;
}

bool SameEvents(const std::vector<EventSpec>& a, const std::vector<EventSpec>& b) {
  auto same = [](const EventSpec& x, const EventSpec& y) {
    if (x.name != y.name || x.audience != y.audience || x.description != y.description ||
        x.schema != y.schema || x.fields.size() != y.fields.size())
      return false;
    for (size_t i = 0; i < x.fields.size(); ++i) {
      const auto& f = x.fields[i];
      const auto& g = y.fields[i];
      if (f.name != g.name || f.type != g.type || f.required != g.required ||
          f.description != g.description)
        return false;
    }
    return true;
  };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
}

const Accepted& AcceptedOf(OpenGate::Kind kind, const std::vector<EventSpec>& accepts) {
  static std::mutex mutex;
  // By the kind and the events' names, then by the events themselves (compared, which is cheap
  // where hashing at every call is not: a Pool's view asks once per Gate at every commit).
  static std::map<std::string, std::vector<std::unique_ptr<Accepted>>> made;
  std::string names = std::to_string(static_cast<int>(kind));
  for (const auto& e : accepts) names += "\n" + e.name;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& seen = made[names];
  for (const auto& a : seen) {
    if (SameEvents(a->events, accepts)) return *a;
  }
  // The key names the Menu in views, which a reader may merge from several processes: made from
  // what the Menu is made of (a hash), never from the order a process first met it.
  const uint64_t hash = EventsHash(accepts);
  std::string key = names + "\n#";
  for (int shift = 60; shift >= 0; shift -= 4) key += "0123456789abcdef"[(hash >> shift) & 15];
  auto fresh = std::make_unique<Accepted>();
  Accepted& a = *fresh;
  a.key = key;
  a.events = accepts;
  a.names = Json::array();
  a.fields = Json::object();
  for (const auto& e : accepts) {
    a.names.push_back(e.name);
    Json fields = Json::array();
    for (const auto& f : e.fields)
      fields.push_back({{"name", f.name}, {"type", f.type}, {"required", f.required}});
    a.fields[e.name] = std::move(fields);
  }
  OpenGate bare;
  bare.kind = kind;
  bare.accepts = accepts;
  a.menu = MenuJson(bare);
  a.menuText = a.menu.dump(-1, ' ', false, Json::error_handler_t::replace);
  a.namesText = a.names.dump(-1, ' ', false, Json::error_handler_t::replace);
  for (const auto& [event, f] : a.fields.items())
    a.fieldsText[event] = f.dump(-1, ' ', false, Json::error_handler_t::replace);
  seen.push_back(std::move(fresh));
  return a;
}

const Accepted& AcceptedOf(const OpenGate& gate) { return AcceptedOf(gate.kind, gate.accepts); }

}  // namespace

Json GateJson(const OpenGate& gate) {
  const Accepted& a = AcceptedOf(gate);
  return {{"gate", gate.name}, {"meta", gate.meta}, {"accepts", a.names}, {"menu", a.menu}};
}

Json GateBrief(const Run::GateView& gate) {
  Json names = Json::array();
  for (const auto& e : gate.accepts) names.push_back(e.name);
  return {{"gate", gate.name}, {"meta", gate.meta}, {"accepts", std::move(names)}};
}

namespace {

// Whether machine `m` is in `machine`'s subtree: the machine itself, and every machine whose
// place is below it ("" is the whole run).
bool Under(const std::string& machine, const std::string& m) {
  return machine.empty() || m == machine ||
         (m.size() > machine.size() && m.compare(0, machine.size(), machine) == 0 &&
          m[machine.size()] == '.');
}

}  // namespace

Json AnsweredGates(const Run& run, const std::string& machine) {
  Json gates = Json::array();
  Json open = Json::array();
  run.visitGates([&](const Run::GateView& g) {
    if (Under(machine, g.machine)) gates.push_back(GateBrief(g));
    open.push_back(g.name);
  });
  return {{"gates", std::move(gates)}, {"open", std::move(open)}};
}

Json GateAnswerBody(const std::string& status, const Run& run, const std::string& machine,
                    const std::function<bool(const std::string&)>& may) {
  // GateAnswerBody(status, AnsweredGates(run, machine), may) without the list of every open
  // Gate's name in between: the host that drives the run answers its own Callers so.
  Json gates = Json::array();
  int64_t open = 0;
  run.visitGates([&](const Run::GateView& g) {
    if (!may(g.name)) return;
    ++open;
    if (Under(machine, g.machine)) gates.push_back(GateBrief(g));
  });
  return {{"status", status}, {"gates", std::move(gates)}, {"open", open}};
}

Json GateAnswerBody(const std::string& status, const Json& answered,
                    const std::function<bool(const std::string&)>& may) {
  Json gates = Json::array();
  for (const Json& g : answered.value("gates", Json::array())) {
    if (g.is_object() && g.contains("gate") && g["gate"].is_string() &&
        may(g["gate"].get<std::string>()))
      gates.push_back(g);
  }
  int64_t open = 0;
  for (const Json& name : answered.value("open", Json::array())) {
    if (name.is_string() && may(name.get<std::string>())) ++open;
  }
  return {{"status", status}, {"gates", std::move(gates)}, {"open", open}};
}

Json GateFields(const OpenGate& gate) { return AcceptedOf(gate).fields; }

namespace {

// Gate `gate` naming its Menu by the key of its kind `a`.
Json RefTo(const OpenGate& gate, const Accepted& a) {
  return {{"gate", gate.name}, {"meta", gate.meta}, {"accepts", a.names}, {"menuOf", a.key}};
}

}  // namespace

Json GateRef(const OpenGate& gate, Json& menus) {
  const Accepted& a = AcceptedOf(gate);
  if (!menus.contains(a.key)) menus[a.key] = a.menu;
  return RefTo(gate, a);
}

namespace {

std::string DumpText(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `j` as DumpText writes it, each Gate (an object with a string `menuOf`) with `"menu": MENU`
// from `made` (each Menu already text) in its place. A Gate's own members, its `meta` among
// them, are written as they are: what a program or an item put there is never taken for a Menu.
void WriteExpanded(const Json& j, const std::map<std::string, std::string, std::less<>>& made,
                   std::string& out) {
  if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) out += ',';
      WriteExpanded(j[i], made, out);
    }
    out += ']';
    return;
  }
  if (!j.is_object()) {
    out += DumpText(j);
    return;
  }
  const auto of = j.find("menuOf");
  const bool gate = of != j.end() && of->is_string();
  const auto menu = gate ? made.find(of->get_ref<const std::string&>()) : made.end();
  if (gate && menu == made.end()) {  // a Menu it does not have: the Gate as it is
    out += DumpText(j);
    return;
  }
  // In the order JSON's objects keep their members (by name), `menu` where `menuOf` was named.
  std::map<std::string, const Json*> members;
  for (const auto& [key, value] : j.items()) members.emplace(key, &value);
  if (gate) {
    members.erase("menuOf");
    members.emplace("menu", nullptr);
  }
  out += '{';
  bool first = true;
  for (const auto& [key, value] : members) {
    if (!first) out += ',';
    first = false;
    out += DumpText(Json(key));
    out += ':';
    if (value == nullptr) {
      out += menu->second;
    } else if (gate) {
      out += DumpText(*value);
    } else {
      WriteExpanded(*value, made, out);
    }
  }
  out += '}';
}

}  // namespace

std::string DumpExpanded(const Json& doc, const Json& menus) {
  if (!menus.is_object() || menus.empty()) return DumpText(doc);
  std::map<std::string, std::string, std::less<>> made;  // each Menu's text, by its key
  for (const auto& [key, menu] : menus.items()) made.emplace(key, DumpText(menu));
  std::string out;
  WriteExpanded(doc, made, out);
  return out;
}

namespace {

// Text of `j` on the end of `out`.
void Put(std::string& out, const Json& j) { AppendJson(out, j); }

// The view of `run` as text, written member by member in the order JSON's objects keep them (by
// name), as dumping it whole would write it: a save writes one at every commit, and building it as
// JSON first (each Gate's names, meta and Menu copied, every part allocated) cost as much as the
// rest of the save.
// `menus`: when given, each Gate names its Menu (`menuOf`) instead of carrying it, and its kind
// is listed there once: a Pool of 64 workers at one kind of Gate stores one Menu, not 64
// (ExpandView puts them back).
// `journaled`: a Pool's `sofar` without its items and failures, which its journal holds (one row
// each): the saved view keeps none of them, or each save would write (and first copy) every item.
// `kept`: with `menus`, each Gate's part is copied from what an earlier save of its opening
// wrote (GateView::savedView), and written there when there is none.
std::string ViewText(const Run& run, const Json& standing, const std::vector<std::string>& stopped,
                     std::vector<const Accepted*>* menus = nullptr, bool journaled = false,
                     bool kept = false) {
  std::string out = "{\"gates\":[";
  std::vector<const Accepted*> kinds;  // each kind of Gate's fields are added once
  bool first = true;
  // The Gates of one state share one list of events: its Menu is looked up once for them all.
  const std::vector<EventSpec>* lastEvents = nullptr;
  OpenGate::Kind lastKind = OpenGate::Kind::kGate;
  const Accepted* last = nullptr;
  run.visitGates([&](const Run::GateView& g) {
    if (last == nullptr || &g.accepts != lastEvents || g.kind != lastKind) {
      last = &AcceptedOf(g.kind, g.accepts);
      lastEvents = &g.accepts;
      lastKind = g.kind;
    }
    const Accepted& a = *last;
    if (!first) out += ',';
    first = false;
    if (kept && !g.savedView.empty()) {
      // Written at an earlier save of this opening: the same bytes, the same piece.
      AppendPiece(out, g.savedViewPiece, g.savedView);
    } else {
      const size_t from = out.size();
      out += "{\"accepts\":";
      out += a.namesText;
      out += ",\"gate\":";
      AppendJsonString(out, g.name);
      if (menus != nullptr) {
        out += ",\"menuOf\":";
        AppendJsonString(out, a.key);
      } else {
        out += ",\"menu\":";
        out += a.menuText;
      }
      out += ",\"meta\":";
      Put(out, g.meta);
      out += '}';
      if (kept) {
        g.savedView.assign(out, from, std::string::npos);
        g.savedViewPiece = 0;  // written now: a piece of its own
        out.resize(from);
        AppendPiece(out, g.savedViewPiece, g.savedView);
      }
    }
    if (std::find(kinds.begin(), kinds.end(), &a) == kinds.end()) {
      if (menus != nullptr) menus->push_back(&a);
      kinds.push_back(&a);
    }
  });
  out += "],\"output\":";
  // An output whose items the journal holds is saved without them (Run::outputInJournal), as the
  // snapshot is: the reader that wants them fills them (FillFromJournal).
  if (journaled && run.outputInJournal()) {
    Put(out, run.storedOutput());
    out += ",\"outputInJournal\":true";
  } else {
    Put(out, run.output());  // not through a conditional, which would copy it
  }
  out += ",\"reason\":";
  Put(out, Json(run.reason()));
  out += ",\"runId\":";
  Put(out, Json(run.id()));
  if (Json sofar = run.sofar(!journaled); !sofar.is_null()) {
    if (journaled) sofar["journaled"] = true;
    out += ",\"sofar\":";
    Put(out, sofar);
  }
  if (!standing.is_null()) {
    out += ",\"standing\":";
    Put(out, standing);
  }
  out += ",\"status\":";
  Put(out, Json(ToString(run.status())));
  // `text`: {chain, fields, hold, stopped, timer}; `fields` each event's fields by its name, a
  // later kind's over an earlier one's (as JSON's update would).
  const std::string chain = StandingChain(run.workflow());
  out += ",\"text\":{\"chain\":";
  Put(out, Json(chain));
  std::map<std::string_view, const std::string*> fields;
  for (const Accepted* a : kinds) {
    for (const auto& [event, text] : a->fieldsText) fields[event] = &text;
  }
  out += ",\"fields\":{";
  first = true;
  for (const auto& [event, text] : fields) {
    if (!first) out += ',';
    first = false;
    Put(out, Json(std::string(event)));
    out += ':';
    out += *text;
  }
  out += "},\"hold\":";
  Put(out,
      chain.empty() ? Json(nullptr) : HoldCounts(run.ended() ? run.carry() : run.handOverState()));
  out += ",\"stopped\":";
  Put(out, Json(stopped));
  out += ",\"timer\":";
  const auto underWay = run.nextUnattendedTimer();
  if (const auto due = underWay ? underWay : run.nextTimer()) {
    out += "{\"due\":";
    Put(out, Json(*due));
    out += ",\"underWay\":";
    out += underWay.has_value() ? "true" : "false";
    out += '}';
  } else {
    out += "null";
  }
  out += "},\"workflow\":";
  Put(out, Json(run.workflow().name));
  out += '}';
  return out;
}

}  // namespace

Json RunView(const Run& run, const Json& standing) {
  return Json::parse(ViewText(run, standing, run.outAtRestore()));
}

std::string SavedViewText(const Run& run, bool kept) {
  std::vector<const Accepted*> kinds;
  std::string report = ViewText(run, nullptr, run.effectsOut(), &kinds, run.journaling(), kept);
  // The members in the order JSON's objects keep them (by name), as dumping the whole would
  // write them; each Menu copied as the text it was written to once, in the order of its key.
  std::sort(kinds.begin(), kinds.end(),
            [](const Accepted* a, const Accepted* b) { return a->key < b->key; });
  std::string out = "{\"build\":";
  Put(out, Json(BuildId()));
  out += ",\"menus\":{";
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) out += ',';
    Put(out, Json(kinds[i]->key));
    out += ':';
    out += kinds[i]->menuText;
  }
  out += "},\"observe\":";
  out += run.observeText();
  out += ",\"report\":";
  out += report;
  out += ",\"working\":";
  Put(out, run.workOut());
  out += '}';
  return out;
}

Json SavedView(const Run& run) { return Json::parse(SavedViewText(run)); }

void ExpandView(Json& view) {
  const auto menus = view.find("menus");
  if (menus == view.end()) return;
  if (view.contains("report") && view["report"].contains("gates")) {
    for (Json& g : view["report"]["gates"]) {
      const auto of = g.find("menuOf");
      if (of == g.end()) continue;
      const auto menu = of->is_string() ? menus->find(of->get<std::string>()) : menus->end();
      g["menu"] = menu != menus->end() ? *menu : Json::array();
      g.erase("menuOf");
    }
  }
  view.erase("menus");
}

bool ItemsInJournal(const Json& view) {
  if (!view.is_object() || !view.contains("report") || !view["report"].is_object()) return false;
  const Json& report = view["report"];
  if (report.value("outputInJournal", false)) return true;
  return report.contains("sofar") && report["sofar"].is_object() &&
         report["sofar"].value("journaled", false);
}

void FillFromJournal(Json& view, const std::vector<Json>& journal) {
  if (!view.contains("report")) return;
  // An ended Pool's output: as a load gives it back (store/rows.h). An entry that is not an
  // item's leaves it without its items; a load of the run names the damage.
  OutputFromJournal(view["report"], journal);
  if (!view["report"].contains("sofar")) return;
  Json& sofar = view["report"]["sofar"];
  if (!sofar.is_object() || !sofar.value("journaled", false)) return;
  sofar.erase("journaled");
  // What it can (a damaged journal is named by a load, not by a read of the view).
  Json items = Json::object();
  Json failures = Json::object();
  ItemsFromJournal(journal, items, failures);
  sofar["items"] = std::move(items);
  sofar["failures"] = std::move(failures);
}

}  // namespace jr2rt
