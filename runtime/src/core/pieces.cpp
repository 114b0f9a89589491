#include "core/pieces.h"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace jr2rt {
namespace {

thread_local bool g_marking = false;
std::atomic<uint64_t> g_next_piece{0};

// The id written between `from` and `to` (digits only), or throws.
uint64_t IdOf(std::string_view text, size_t from, size_t to) {
  uint64_t id = 0;
  const char* first = text.data() + from;
  const char* last = text.data() + to;
  const auto [end, ec] = std::from_chars(first, last, id);
  if (ec != std::errc() || end != last || from == to || id == 0) {
    throw std::invalid_argument("a piece's mark at byte " + std::to_string(from) + " has no id");
  }
  return id;
}

}  // namespace

MarkPieces::MarkPieces() : before_(g_marking) { g_marking = true; }
MarkPieces::~MarkPieces() { g_marking = before_; }

void AppendPiece(std::string& out, uint64_t& id, const std::string& text) {
  if (!g_marking) {
    out += text;
    return;
  }
  if (id == 0) id = g_next_piece.fetch_add(1, std::memory_order_relaxed) + 1;
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, id);
  (void)ec;  // 20 digits fit
  out.reserve(out.size() + text.size() + 24);
  out += kPieceOpen;
  out.append(digits, end);
  out += kPieceName;
  out += text;
  out += kPieceClose;
}

bool CheckingSaves() {
  static const bool kOn = [] {
    const char* v = std::getenv("JR2_CHECK_SAVES");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return kOn;
}

bool HasPieces(std::string_view text) {
  return std::memchr(text.data(), kPieceOpen, text.size()) != nullptr;
}

// Walks a marked text: `plain` is given each stretch of text outside the marks, `piece` each
// piece's id (its digits) and text, in order. Throws on a mark that is not whole.
template <typename Plain, typename OnPiece>
void Walk(std::string_view marked, Plain&& plain, OnPiece&& piece) {
  size_t at = 0;
  while (at < marked.size()) {
    const size_t open = marked.find(kPieceOpen, at);
    if (open == std::string_view::npos) {
      plain(marked.substr(at));
      break;
    }
    plain(marked.substr(at, open - at));
    const size_t name = marked.find(kPieceName, open);
    const size_t close = name == std::string_view::npos ? name : marked.find(kPieceClose, name);
    if (close == std::string_view::npos)
      throw std::invalid_argument("a piece's mark at byte " + std::to_string(open) +
                                  " is not closed");
    piece(open + 1, name, marked.substr(name + 1, close - name - 1));
    at = close + 1;
  }
}

std::string Unmarked(std::string_view marked) {
  std::string out;
  out.reserve(marked.size());
  Walk(
      marked, [&](std::string_view text) { out += text; },
      [&](size_t, size_t, std::string_view text) { out += text; });
  return out;
}

void SplitPieces(std::string_view marked, std::string& skeleton, std::vector<Piece>& pieces) {
  skeleton.clear();
  pieces.clear();
  Walk(
      marked, [&](std::string_view text) { skeleton += text; },
      [&](size_t from, size_t to, std::string_view text) {
        pieces.push_back({IdOf(marked, from, to), text});
        skeleton += kPieceOpen;
        skeleton += marked.substr(from, to - from);
        skeleton += kPieceClose;
      });
}

std::vector<uint64_t> PieceIds(std::string_view skeleton) {
  std::vector<uint64_t> out;
  size_t at = 0;
  while ((at = skeleton.find(kPieceOpen, at)) != std::string_view::npos) {
    const size_t close = skeleton.find(kPieceClose, at);
    if (close == std::string_view::npos)
      throw std::invalid_argument("a piece's mark at byte " + std::to_string(at) +
                                  " is not closed");
    out.push_back(IdOf(skeleton, at + 1, close));
    at = close + 1;
  }
  return out;
}

std::string Assemble(std::string_view skeleton,
                     const std::function<const std::string*(uint64_t)>& find) {
  std::string out;
  size_t at = 0;
  while (at < skeleton.size()) {
    const size_t open = skeleton.find(kPieceOpen, at);
    if (open == std::string_view::npos) {
      out.append(skeleton, at);
      break;
    }
    out.append(skeleton, at, open - at);
    const size_t close = skeleton.find(kPieceClose, open);
    if (close == std::string_view::npos)
      throw std::invalid_argument("a piece's mark at byte " + std::to_string(open) +
                                  " is not closed");
    const uint64_t id = IdOf(skeleton, open + 1, close);
    const std::string* text = find(id);
    if (text == nullptr) throw std::out_of_range("piece " + std::to_string(id) + " is missing");
    out += *text;
    at = close + 1;
  }
  return out;
}

}  // namespace jr2rt
