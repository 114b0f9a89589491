// A stored text in pieces (#33, docs/runtime.md#the-store): the parts of a run's snapshot and view
// that a save writes again only when they changed — each Pool worker's part of the snapshot and
// of the observation, each open Gate's part of the view. The run keeps each part's text from the
// save that wrote it (PoolActor::Kept, Run::GateEntry::savedView); while a saver asks for it
// (MarkPieces), each kept part is written inside marks that name it:
//
//   <RS> id <US> text <GS>      RS, US, GS: the bytes 0x1E, 0x1F, 0x1D
//
// The name, `id`, is a number this process never gives twice, given when the part's text is
// written: the same id, the same bytes. JSON text never holds those bytes raw (a string escapes
// every byte below 0x20), so a mark is never read out of a value. A store that keeps parts
// apart (the SQLite store: table `parts`) stores the text with each piece's text taken out
// (SplitPieces: its skeleton) and writes only the pieces it does not hold; a store that does not
// stores Unmarked(text).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace jr2rt {

inline constexpr char kPieceOpen = '\x1E';
inline constexpr char kPieceName = '\x1F';
inline constexpr char kPieceClose = '\x1D';

// While one lives, kept parts written on this thread are marked (AppendPiece). Nests.
class MarkPieces {
 public:
  MarkPieces();
  ~MarkPieces();
  MarkPieces(const MarkPieces&) = delete;
  MarkPieces& operator=(const MarkPieces&) = delete;

 private:
  bool before_;
};

// Appends a kept part's `text` to `out`: marked with its id while MarkPieces lives on this thread
// (`id` 0 is given the next id first), as it is otherwise. Whoever writes `text` again sets `id`
// to 0.
void AppendPiece(std::string& out, uint64_t& id, const std::string& text);

// JR2_CHECK_SAVES set (the test suite sets it for every test): each save's texts are checked
// against what they were written from, by the saver and by the store that keeps pieces apart.
bool CheckingSaves();

// Whether `text` holds a mark: a marked text, or a stored skeleton.
bool HasPieces(std::string_view text);

// `marked` without its marks: the text a store that keeps no parts stores, and what a marked
// text says.
std::string Unmarked(std::string_view marked);

struct Piece {
  uint64_t id = 0;
  std::string_view text;  // into the marked text given to SplitPieces
};

// Splits a marked text into its skeleton (each piece as <RS> id <GS>, its text taken out) and its
// pieces, in order. Throws std::invalid_argument on a mark that is not whole (a bug, never data).
void SplitPieces(std::string_view marked, std::string& skeleton, std::vector<Piece>& pieces);

// The ids a skeleton names, in order.
std::vector<uint64_t> PieceIds(std::string_view skeleton);

// A skeleton with each piece's text put back: `find` gives the text of an id, or nullptr when it
// has none (then Assemble throws std::out_of_range naming the id).
std::string Assemble(std::string_view skeleton,
                     const std::function<const std::string*(uint64_t)>& find);

}  // namespace jr2rt
