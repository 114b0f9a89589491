#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "compiler/sema/program.h"
#include "compiler/sema/rules.h"
#include "compiler/syntax/parse.h"

namespace jr2::sema {

extern const std::string_view kStdlibText;

namespace {

namespace fs = std::filesystem;

std::string StemOf(const std::string& path) { return fs::path(path).stem().string(); }

std::string Describe(LoadError e, size_t size) {
  switch (e) {
    case LoadError::kNotFound:
      return "no such file";
    case LoadError::kIsDirectory:
      return "it is a directory; give the `.jr2` files in it (for example `dir/*.jr2`)";
    case LoadError::kUnreadable:
      return "it cannot be read (check its permissions)";
    case LoadError::kTooLarge:
      return fmt::format(
          "it is {:.1f} MiB, and jr2c reads files of up to {} MiB; split it with "
          "`import`",
          static_cast<double>(size) / (1 << 20), SourceManager::kMaxFileBytes >> 20);
  }
  return "it cannot be read";
}

class Loader {
 public:
  Loader(SourceManager& sm, Diagnostics& diags, Program& program)
      : sm_(sm), diags_(diags), program_(program) {}

  Module* loadText(const std::string& name, std::string text, bool followImports) {
    followImports_ = followImports;
    return visit(sm_.add(name, "", std::move(text)));
  }

  // A file given to jr2c: one that cannot be read is E0106, a diagnostic with no place (so it
  // reaches the JSON and SARIF output like any other).
  Module* loadRoot(const std::string& path) {
    LoadError error{};
    size_t size = 0;
    const SourceFile* file = sm_.load(path, path, &error, &size);
    if (file == nullptr) {
      diags_.emit(diag::FileUnreadable, SourceRange{}, path, Describe(error, size));
      return nullptr;
    }
    return visit(file);
  }

  void loadStd() {
    const SourceFile* file = sm_.add("<std>/std.jr2", "", std::string(kStdlibText));
    auto m = std::make_unique<Module>();
    m->source = file;
    m->stem = "std";
    m->isStd = true;
    m->ast = syntax::Parse(*file, diags_);
    program_.std = m.get();
    own(*m);
    program_.modules.push_back(std::move(m));
  }

 private:
  void own(const Module& m) {
    for (const auto& d : m.ast->decls) program_.owners[d.get()] = &m;
  }

  // Loads a file and its imports depth first. A file met again while it is still on the stack
  // closes an import cycle.
  Module* visit(const SourceFile* file) {
    if (auto it = byFile_.find(file->id()); it != byFile_.end()) return it->second;
    auto owned = std::make_unique<Module>();
    Module* m = owned.get();
    m->source = file;
    m->stem = StemOf(file->name());
    m->ast = syntax::Parse(*file, diags_);
    byFile_[file->id()] = m;
    own(*m);
    program_.modules.push_back(std::move(owned));
    stack_.push_back(m);
    if (followImports_) {
      for (const ast::Import& imp : m->ast->imports) importOne(m, imp);
    }
    stack_.pop_back();
    return m;
  }

  void importOne(Module* m, const ast::Import& imp) {
    const std::string stem = StemOf(imp.path);
    m->failedImports.insert(stem);  // until it loads
    tryImport(m, imp, stem);
    if (m->imports.count(stem) != 0) m->failedImports.erase(stem);
  }

  void tryImport(Module* m, const ast::Import& imp, const std::string& stem) {
    const fs::path base = fs::path(m->source->name()).parent_path();
    const std::string display = (base / imp.path).lexically_normal().string();
    if (!IsIdentifier(stem)) {
      diags_.emit(diag::ImportStemNotIdent, imp.pathRange, stem);
      return;
    }
    if (stem == "std") {
      diags_.emit(diag::ImportStemStd, imp.pathRange);
      return;
    }
    if (m->imports.count(stem) != 0) {
      diags_.emit(diag::ImportStemTwice, imp.pathRange, stem);
      return;
    }
    LoadError error{};
    size_t size = 0;
    const SourceFile* file = sm_.load(display, display, &error, &size);
    if (file == nullptr) {
      if (error == LoadError::kNotFound) {
        diags_.emit(diag::ImportNotFound, imp.pathRange, imp.path, display);
      } else {
        diags_.emit(diag::ImportNotFound, imp.pathRange, imp.path,
                    fmt::format("{}, but {}", display, Describe(error, size)));
      }
      return;
    }
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i]->source != file) continue;
      std::string chain;
      for (size_t k = i; k < stack_.size(); ++k) chain += "`" + stack_[k]->source->name() + "` → ";
      chain += "`" + file->name() + "`";
      diags_.emit(diag::ImportCycle, imp.pathRange, chain);
      return;
    }
    m->imports[stem] = visit(file);
  }

  SourceManager& sm_;
  Diagnostics& diags_;
  Program& program_;
  std::map<FileId, Module*> byFile_;
  std::vector<Module*> stack_;
  bool followImports_ = true;
};

}  // namespace

LoadResult LoadText(SourceManager& sm, const std::string& name, std::string text,
                    Diagnostics& diags, bool followImports) {
  LoadResult result;
  Loader loader(sm, diags, result.program);
  loader.loadStd();
  result.program.roots.push_back(loader.loadText(name, std::move(text), followImports));
  return result;
}

LoadResult Load(SourceManager& sm, const std::vector<std::string>& paths, Diagnostics& diags) {
  LoadResult result;
  Loader loader(sm, diags, result.program);
  loader.loadStd();
  for (const std::string& path : paths) {
    if (Module* m = loader.loadRoot(path)) {
      if (std::find(result.program.roots.begin(), result.program.roots.end(), m) ==
          result.program.roots.end()) {
        result.program.roots.push_back(m);
      }
    }
  }
  return result;
}

}  // namespace jr2::sema
