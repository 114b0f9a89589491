// The `.jr2` type model: every value is JSON-shaped. Records are JSON objects with known fields,
// `json` is any value (checked at run time), and string-literal unions are strings from a set.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/source/source.h"

namespace jr2::sema {

struct Type;
using TypePtr = const Type*;

struct RecordField {
  std::string name;
  TypePtr type = nullptr;
  bool required = true;  // false when the field has a default or an optional type
  SourceRange range;
  std::string description = "";  // what the author wrote for the reader (and for an Agent)
};

struct Record {
  std::string name;  // `Ticket`, `event approve`; empty for an object literal's type
  std::vector<RecordField> fields;
  const RecordField* find(const std::string& n) const {
    for (const auto& f : fields) {
      if (f.name == n) return &f;
    }
    return nullptr;
  }
};

struct Type {
  enum class Kind {
    kError,  // a value whose type is unknown after an error: fits anywhere, reports nothing
    kJson,
    kNull,
    kString,
    kInt,
    kFloat,
    kBool,
    kDuration,
    kLiterals,  // a union of string literals
    kList,
    kMap,
    kOptional,
    kRecord,
  };
  Kind kind = Kind::kError;
  TypePtr elem = nullptr;             // list, map, optional
  std::vector<std::string> literals;  // kLiterals, sorted and unique
  const Record* record = nullptr;     // kRecord
};

// Owns every type of one compilation and makes new ones.
class Types {
 public:
  Types();
  TypePtr error() const { return error_; }
  TypePtr json() const { return json_; }
  TypePtr null() const { return null_; }
  TypePtr string() const { return string_; }
  TypePtr integer() const { return int_; }
  TypePtr floating() const { return float_; }
  TypePtr boolean() const { return bool_; }
  TypePtr duration() const { return duration_; }
  TypePtr list(TypePtr elem);
  TypePtr map(TypePtr elem);
  TypePtr optional(TypePtr elem);  // `T??` is `T?`; `json?` and `null?` stay as they are
  TypePtr literals(std::vector<std::string> values);
  TypePtr record(const Record* r);
  Record* newRecord(std::string name);

 private:
  TypePtr make(Type::Kind kind, TypePtr elem = nullptr);
  TypePtr push(Type t);
  std::deque<Type> types_;
  std::deque<Record> records_;
  TypePtr error_, json_, null_, string_, int_, float_, bool_, duration_;
};

// `string`, `list<Ticket>`, `"a" | "b"`, `Outcome?`, `{ id: string }`.
std::string Spell(TypePtr t);

// The JSON Schema (draft 2020-12) of a record's values, as JSON text: an object with its fields
// as properties (each with its description), the required ones listed, no other property allowed.
// A record a field holds is written once under `$defs` and referred to (records may nest
// themselves). A `duration` is a whole number of milliseconds; `json` is any value. What an
// Agent's harness gives the model for an event's payload (an Agent's Menu,
// docs/runtime.md#the-menu).
std::string JsonSchema(const Record& record, const std::string& description = "");

// The type without its `?` (itself when not optional).
TypePtr StripOptional(TypePtr t);

// Whether a value of type `from` fits where `to` is wanted. When it does not, `why` names the
// first field path that does not fit (`reason`), for messages; it is left empty otherwise.
bool Assignable(TypePtr from, TypePtr to, std::string* why = nullptr);

}  // namespace jr2::sema
