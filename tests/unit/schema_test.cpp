// sema::JsonSchema: the JSON Schema of a record's values, which an Agent's Menu gives a harness
// for each event's payload. Each kind of type, descriptions, what is required, and records that
// nest (themselves too) under `$defs`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compiler/driver/driver.h"
#include "compiler/sema/program.h"

namespace jr2 {
namespace {

using Json = nlohmann::json;

// The schema of the record `name` declares in `text`, parsed.
Json SchemaOf(const std::string& text, const std::string& name) {
  SourceManager sm;
  Diagnostics diags;
  sema::Program program = std::move(sema::LoadText(sm, "t.jr2", text, diags, false).program);
  driver::Analyze(program, diags);
  EXPECT_FALSE(diags.hasErrors());
  for (const auto& [decl, type] : program.typeInfo->declTypes) {
    if (decl->name.text == name && type->kind == sema::Type::Kind::kRecord)
      return Json::parse(sema::JsonSchema(*type->record));
  }
  ADD_FAILURE() << "no record " << name;
  return nullptr;
}

TEST(JsonSchema, EachKindOfField) {
  const Json s = SchemaOf(R"(
type Every {
  text: string "Some text."
  count: int
  ratio: float
  flag: bool
  wait: duration "How long."
  pick: "a" | "b"
  maybe: string?
  many: list<int>
  byName: map<bool>
  anything: json
  withDefault: int = 3
}
)",
                          "Every");
  const Json want = {
      {"type", "object"},
      {"properties",
       {{"text", {{"type", "string"}, {"description", "Some text."}}},
        {"count", {{"type", "integer"}}},
        {"ratio", {{"type", "number"}}},
        {"flag", {{"type", "boolean"}}},
        {"wait",
         {{"type", "integer"}, {"description", "How long. (a whole number of milliseconds)"}}},
        {"pick", {{"type", "string"}, {"enum", {"a", "b"}}}},
        {"maybe", {{"anyOf", {{{"type", "string"}}, {{"type", "null"}}}}}},
        {"many", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
        {"byName", {{"type", "object"}, {"additionalProperties", {{"type", "boolean"}}}}},
        {"anything", Json::object()},
        {"withDefault", {{"type", "integer"}}}}},
      {"required", {"text", "count", "ratio", "flag", "wait", "pick", "many", "byName"}},
      {"additionalProperties", false}};
  EXPECT_EQ(s, want) << s.dump(2);
}

TEST(JsonSchema, NestedRecordsAreDefinedOnceAndMayHoldThemselves) {
  const Json s = SchemaOf(R"(
type Node {
  label: string
  children: list<Node>
}
type Tree {
  root: Node
  spare: Node?
}
)",
                          "Tree");
  EXPECT_EQ(s["properties"]["root"], (Json{{"$ref", "#/$defs/Node"}}));
  EXPECT_EQ(s["properties"]["spare"]["anyOf"][0], (Json{{"$ref", "#/$defs/Node"}}));
  ASSERT_TRUE(s["$defs"].contains("Node")) << s.dump(2);
  EXPECT_EQ(s["$defs"].size(), 1u);
  EXPECT_EQ(s["$defs"]["Node"]["properties"]["children"]["items"],
            (Json{{"$ref", "#/$defs/Node"}}));
  EXPECT_EQ(s["$defs"]["Node"]["required"], (Json{"label", "children"}));
}

TEST(JsonSchema, TextIsEscaped) {
  const Json s = SchemaOf(R"(
type Odd {
  quote: "say \"hi\"" | "back\\slash" "Line one\nline two, with a \"quote\"."
}
)",
                          "Odd");
  EXPECT_EQ(s["properties"]["quote"]["enum"], (Json{"back\\slash", "say \"hi\""}));
  EXPECT_EQ(s["properties"]["quote"]["description"], "Line one\nline two, with a \"quote\".");
}

}  // namespace
}  // namespace jr2
