// How the proxy cuts a packed box into pieces that fit a staging slot (proxy/staged.hpp): the
// pieces follow one another in the packed data, cover it exactly, each fits, and each is the
// box of the data it holds.
#include <utility>
#include <vector>

#include "catch.hpp"
#include "proxy/staged.hpp"

using hivecl::proxy::box_piece;
using hivecl::proxy::BoxPiece;
using hivecl::proxy::Extent;

namespace {

std::vector<BoxPiece> cut(const Extent& region, size_t element, size_t most) {
  std::vector<BoxPiece> pieces;
  const uint64_t total = uint64_t{region[0]} * element * region[1] * region[2];
  for (uint64_t offset = 0; offset < total; offset += pieces.back().bytes) {
    pieces.push_back(box_piece(region, element, offset, most));
    REQUIRE(pieces.back().bytes > 0);
  }
  return pieces;
}

// Where element (x, y, z) of the box lies in its packed data.
uint64_t packed_offset(const Extent& region, size_t element, size_t x, size_t y, size_t z) {
  return ((uint64_t{z} * region[1] + y) * region[0] + x) * element;
}

// A piece is the box of its own data: in the box, of its bytes, and packed the run of the box's
// data from its first element to its last; one of several rows spans whole rows, one of several
// slices whole slices.
void check_piece(const Extent& region, size_t element, const BoxPiece& piece) {
  CHECK(piece.bytes == uint64_t{piece.region[0]} * piece.region[1] * piece.region[2] * element);
  for (size_t axis = 0; axis < 3; ++axis) CHECK(piece.origin[axis] + piece.region[axis] <= region[axis]);
  CHECK(packed_offset(region, element, piece.origin[0], piece.origin[1], piece.origin[2]) == piece.offset);
  const uint64_t last = packed_offset(region, element, piece.origin[0] + piece.region[0] - 1,
                                      piece.origin[1] + piece.region[1] - 1, piece.origin[2] + piece.region[2] - 1);
  CHECK(last + element == piece.offset + piece.bytes);
  if (piece.region[1] > 1 || piece.region[2] > 1) CHECK(piece.region[0] == region[0]);
  if (piece.region[2] > 1) CHECK(piece.region[1] == region[1]);
}

void check_pieces(const Extent& region, size_t element, size_t most) {
  uint64_t next = 0;
  for (const BoxPiece& piece : cut(region, element, most)) {
    CHECK(piece.offset == next);
    CHECK(piece.bytes <= most);
    check_piece(region, element, piece);
    next += piece.bytes;
  }
  CHECK(next == uint64_t{region[0]} * element * region[1] * region[2]);
}

}  // namespace

TEST_CASE("A packed box is cut into pieces of whole slices, whole rows or parts of a row", "[staging]") {
  const Extent box{100, 7, 5};  // slices of 2800 bytes, rows of 400, in 4-byte elements
  SECTION("slices fit") {
    check_pieces(box, 4, 10000);
    CHECK(cut(box, 4, 10000).size() == 2);  // 3 slices, then 2
  }
  SECTION("rows fit") {
    check_pieces(box, 4, 1000);
    CHECK(cut(box, 4, 1000).size() == 4 * 5);  // 2 + 2 + 2 + 1 rows per slice
  }
  SECTION("parts of a row") {
    check_pieces(box, 4, 300);
    CHECK(cut(box, 4, 300).size() == 2 * 7 * 5);  // 75 + 25 elements per row
  }
  SECTION("a buffer's range: one row") {
    check_pieces({10'000'001, 1, 1}, 1, 4096);
    CHECK(cut({10'000'001, 1, 1}, 1, 4096).size() == 10'000'001 / 4096 + 1);
  }
  SECTION("the whole box in one piece") { CHECK(cut(box, 4, 1 << 20).size() == 1); }
}

// A run of the packed data from any element to any element's end, cut with the bytes left as
// the most (how proxies cut an image's range moved from one to the other): pieces that follow
// one another, each the box of its own data, covering the run exactly, at most five (a part of
// a row, rows, slices, rows, a part of a row).
TEST_CASE("A run of a packed box from any element is cut into at most five pieces", "[staging]") {
  const Extent box{100, 7, 5};
  const size_t element = 4, row = 400, slice = 2800;  // as above
  for (const auto& [begin, end] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 5 * slice}, {4, 8}, {396, 404}, {row, 3 * slice}, {8, 5 * slice - 8}, {slice + 12, 3 * slice + 2 * row + 40},
           {2 * row + 4, 2 * row + 4 + row}, {slice - 4, 4 * slice + 4}}) {
    CAPTURE(begin, end);
    std::vector<BoxPiece> pieces;
    for (uint64_t offset = begin; offset < end; offset += pieces.back().bytes) {
      pieces.push_back(box_piece(box, element, offset, end - offset));
      const BoxPiece& piece = pieces.back();
      REQUIRE(piece.bytes > 0);
      CHECK(piece.offset == offset);
      check_piece(box, element, piece);
    }
    CHECK(pieces.back().offset + pieces.back().bytes == end);
    CHECK(pieces.size() <= 5);
  }
}
