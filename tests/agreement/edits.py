#!/usr/bin/env python3
"""Seeded edits of real .jr2 files, for the agreement test of `jr2c diff` (#36,
docs/diff.md#the-agreement-test): the samples and the conformance workflows, each edited the ways
a person edits a workflow, so the test can check `jr2c diff` against the runtime's own restore on
the programs users run rather than on one written for the test.

The edits are structural and made on the text: a state renamed, removed or added; an `after`
changed, removed or added; an invoke removed or a Gate added; a `var` added, removed or retyped;
a parameter added (with a default or without), removed, or its default changed; a record field
added (required or defaulted) or removed; a literal union narrowed; a Pool's cap changed; a
workflow renamed. Every one that applies to a file is a candidate, in the order the file has
them; the candidates are shuffled with a seed of the file's name, and version K (1..N) takes the
K-th of the candidates that `jr2c check` accepts (a candidate it refuses is counted and shown).
Version 0 is the file as it is.

  edits.py plan   --name STEM --versions N FILE
                  # prints {externs: {NAME: effect|next|read}, imports: [FILE]}: the stubs the
                  # versions need, and the files they import (copied beside them by `emit`)
  edits.py emit   --name STEM --versions N --jr2c JR2C --out DIR FILE
                  # writes DIR/agr_STEM_vKK.jr2 for K in 0..N, and DIR/agr_STEM.edits: a JSON
                  # line per version, what it is (`edit`; null for one left as the file when
                  # fewer than N candidates check), and the candidates jr2c refused
  edits.py list   --name STEM --versions N --jr2c JR2C FILE   # the same, printed
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---- reading the text ---------------------------------------------------------------------------

def match_brace(text, at):
    """The index just past the `}` that closes the `{` at `at`, skipping strings and comments."""
    depth = 0
    i = at
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
        elif c == '/' and text.startswith('//', i):
            while i < n and text[i] != '\n':
                i += 1
            continue
        elif c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def open_brace(text, at):
    """The first `{` at parenthesis depth 0 from `at` (the body of a declaration)."""
    depth = 0
    i = at
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
        elif c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
        elif c == '{' and depth == 0:
            return i
        i += 1
    return -1


def line_start(text, at):
    return text.rfind('\n', 0, at) + 1


def line_end(text, at):
    end = text.find('\n', at)
    return len(text) if end < 0 else end + 1


class Decl:
    """A top-level declaration: its kind, name, the span of its text and of its body."""

    def __init__(self, kind, name, start, head_end, body_end):
        self.kind = kind
        self.name = name
        self.start = start        # where its keyword starts
        self.head_end = head_end  # its `{` (or -1 when it has none)
        self.end = body_end       # just past its `}`


TOP = re.compile(r'^(machine|type|pool|source|agent)\s+(\w+)', re.M)


def decls(text):
    out = []
    for m in TOP.finditer(text):
        brace = open_brace(text, m.end())
        # A machine with no body on its line (never): skip anything without a `{`.
        if brace < 0:
            continue
        # `pool X of dispatch W { input: … } {`: the body is the last brace on the header.
        end = match_brace(text, brace)
        if m.group(1) == 'pool':
            rest = text[end:line_end(text, end)]
            if rest.strip().startswith('{'):
                brace = end + rest.index('{')
                end = match_brace(text, brace)
        out.append(Decl(m.group(1), m.group(2), m.start(), brace, end))
    return out


STATE = re.compile(r'^([ \t]*)((?:initial\s+)?(?:final\s+)?(?:parallel\s+)?)state\s+(\w+)', re.M)


class State:
    def __init__(self, name, start, end, has_block, final, initial, indent, block_open):
        self.name = name
        self.start = start  # the start of its line
        self.end = end      # past its last line (its `}` line, or its one line)
        self.has_block = has_block
        self.final = final
        self.initial = initial
        self.indent = indent
        self.block_open = block_open  # the end of its opening line


def states(text, d):
    out = []
    for m in STATE.finditer(text, d.head_end, d.end):
        start = line_start(text, m.start())
        eol = line_end(text, m.start())
        head = text[m.end():eol]
        has_block = '{' in head.split('//')[0]
        if has_block:
            close = match_brace(text, m.end() + head.index('{'))
            end = line_end(text, close - 1)
        else:
            end = eol
        out.append(State(m.group(3), start, end, has_block, 'final' in m.group(2),
                         'initial' in m.group(2), m.group(1), eol))
    return out


def finals(text, d):
    return [s for s in states(text, d) if s.final]


# ---- the edits ----------------------------------------------------------------------------------

def splice(text, start, end, new):
    return text[:start] + new + text[end:]


def edits(text):
    """Every candidate edit of `text`: (what it is, the edited text)."""
    out = []
    ds = decls(text)
    machines = [d for d in ds if d.kind == 'machine']
    for d in machines:
        body = text[d.head_end:d.end]
        sts = states(text, d)
        fins = [s for s in sts if s.final and s.indent.count(' ') <= 2]
        for s in sts:
            # A state renamed, and every transition into it.
            if len([t for t in sts if t.name == s.name]) == 1:
                new = s.name + '_next'
                nb = re.sub(r'((?:initial\s+|final\s+|parallel\s+)*state\s+)' + s.name + r'\b',
                            r'\g<1>' + new, body)
                nb = re.sub(r'(->\s*(?:\w+\.)*)' + s.name + r'\b', r'\g<1>' + new, nb)
                out.append(('the state `%s` of `%s` renamed `%s`' % (s.name, d.name, new),
                            text[:d.head_end] + nb + text[d.end:]))
            # A state removed, its transitions sent to a final state.
            if s.has_block and not s.initial and not s.final and fins:
                f = fins[0].name
                nb = body[:s.start - d.head_end] + body[s.end - d.head_end:]
                nb = re.sub(r'(->\s*)(?:\w+\.)*' + s.name + r'\b', r'\g<1>' + f, nb)
                out.append(('the state `%s` of `%s` removed (its transitions go to `%s`)'
                            % (s.name, d.name, f), text[:d.head_end] + nb + text[d.end:]))
            if s.has_block and not s.final and fins:
                f = fins[0].name
                ins = s.indent + '  after 7h -> %s\n' % f
                out.append(('an `after 7h -> %s` added to the state `%s` of `%s`'
                            % (f, s.name, d.name), splice(text, s.block_open, s.block_open, ins)))
                ins = s.indent + '  invoke gate agr_extra\n'
                out.append(('a Gate `agr_extra` invoked in the state `%s` of `%s`'
                            % (s.name, d.name), splice(text, s.block_open, s.block_open, ins)))
                # A new state, entered from this one after a while.
                if s.indent.count(' ') <= 2:
                    ins = s.indent + '  after 5h -> agr_parked\n'
                    parked = ('  state agr_parked {\n    invoke gate agr_parked\n'
                              '    after 1h -> %s\n  }\n' % f)
                    t2 = splice(text, fins[0].start, fins[0].start, parked)
                    t2 = splice(t2, s.block_open, s.block_open, ins)
                    out.append(('a state `agr_parked` added to `%s`, entered from `%s`'
                                % (d.name, s.name), t2))
        # `after`s changed or removed.
        for m in re.finditer(r'\bafter\s+(\d+)(ms|s|m|h|d)\b', body):
            at = d.head_end + m.start()
            new = 'after %d%s' % (int(m.group(1)) * 2, m.group(2))
            out.append(('the `%s` of `%s` made `%s`' % (m.group(0), d.name, new),
                        splice(text, at, d.head_end + m.end(), new)))
            ls = line_start(text, at)
            le = line_end(text, at)
            line = text[ls:le]
            if '{' in line.split('//')[0]:
                end = line_end(text, match_brace(text, ls + line.index('{')) - 1)
            else:
                end = le
            out.append(('the `%s` of `%s` removed' % (line.strip().rstrip('{').strip(), d.name),
                        splice(text, ls, end, '')))
        # Invokes removed (one line each).
        for m in re.finditer(r'^[ \t]*invoke\b[^\n]*\n', body, re.M):
            line = m.group(0)
            if line.count('(') != line.count(')') or line.count('{') != line.count('}'):
                continue
            at = d.head_end + m.start()
            out.append(('`%s` removed from `%s`' % (line.split('//')[0].strip(), d.name),
                        splice(text, at, at + len(line), '')))
        # `var`s added, removed, retyped.
        first = line_end(text, d.head_end)
        out.append(('a `var agr_seen: int = 0` added to `%s`' % d.name,
                    splice(text, first, first, '  var agr_seen: int = 0\n')))
        for m in re.finditer(r'^([ \t]*)var\s+(\w+)\s*:\s*([^=\n]+?)\s*=\s*([^\n]+)\n', body, re.M):
            at = d.head_end + m.start()
            name, typ = m.group(2), m.group(3)
            out.append(('the `var %s` of `%s` removed' % (name, d.name),
                        splice(text, at, at + len(m.group(0)), '')))
            for new_type, new_value in (('string', '""'), ('int', '0'), ('float', '0.0'),
                                        ('json', 'null')):
                if new_type == typ:
                    continue
                line = '%svar %s: %s = %s\n' % (m.group(1), name, new_type, new_value)
                out.append(('the `var %s` of `%s` made a `%s` (was `%s`)'
                            % (name, d.name, new_type, typ),
                            splice(text, at, at + len(m.group(0)), line)))
                break
        out.extend(param_edits(text, d))
    for d in ds:
        if d.kind == 'type':
            first = line_end(text, d.head_end)
            out.append(('a field `agr_note: string = ""` added to `%s`' % d.name,
                        splice(text, first, first, '  agr_note: string = ""\n')))
            out.append(('a required field `agr_note: string` added to `%s`' % d.name,
                        splice(text, first, first, '  agr_note: string\n')))
            for m in re.finditer(r'^[ \t]*(\w+)\s*:[^\n]*\n', text[first:d.end], re.M):
                at = first + m.start()
                out.append(('the field `%s` removed from `%s`' % (m.group(1), d.name),
                            splice(text, at, at + len(m.group(0)), '')))
        if d.kind == 'pool':
            out.extend(param_edits(text, d))
            body = text[d.head_end:d.end]
            for m in re.finditer(r'\bcap:\s*(\d+)', body):
                at = d.head_end + m.start()
                new = 'cap: %d' % (int(m.group(1)) + 1)
                out.append(('the cap of `%s` made %d' % (d.name, int(m.group(1)) + 1),
                            splice(text, at, d.head_end + m.end(), new)))
    # Literal unions narrowed: the last literal dropped.
    for m in re.finditer(r'("[\w-]+"(?:\s*\|\s*"[\w-]+")+)', text):
        alts = [a.strip() for a in m.group(1).split('|')]
        new = ' | '.join(alts[:-1])
        out.append(('the union `%s` narrowed to `%s`' % (m.group(1), new),
                    splice(text, m.start(), m.end(), new)))
    for m in re.finditer(r'^workflow\s+(\w+)', text, re.M):
        out.append(('the workflow `%s` renamed `%s_next`' % (m.group(1), m.group(1)),
                    splice(text, m.start(1), m.end(1), m.group(1) + '_next')))
    return out


def param_edits(text, d):
    """A machine's or Pool's parameters: one added (with a default, without), each removed, each
    default changed."""
    out = []
    head = text[d.start:d.head_end]
    name_end = d.start + re.match(r'\w+\s+\w+', head).end()
    if text[name_end] == '(':
        close = name_end
        depth = 0
        while True:
            if text[close] == '(':
                depth += 1
            elif text[close] == ')':
                depth -= 1
                if depth == 0:
                    break
            close += 1
        inner = text[name_end + 1:close]
        sep = ', ' if inner.strip() and not inner.rstrip().endswith(',') else ''
        if inner.rstrip().endswith(','):
            sep = ' '
        for p, what in (('agr_level: int = 1', 'with a default'), ('agr_level: int', 'without a default')):
            out.append(('a parameter `%s` %s added to `%s`' % (p, what, d.name),
                        splice(text, close, close, sep + p)))
        for m in re.finditer(r'(\w+)\s*:\s*[^,=()]+(?:\s*=\s*([^,()\n]+))?', inner):
            at = name_end + 1 + m.start()
            end = name_end + 1 + m.end()
            rest = text[end:close]
            # The parameter and the comma after it (or before it, when it is the last).
            if rest.lstrip().startswith(','):
                end += rest.index(',') + 1
            out.append(('the parameter `%s` of `%s` removed' % (m.group(1), d.name),
                        splice(text, at, end, '')))
            if m.group(2):
                value = m.group(2).strip()
                if re.fullmatch(r'-?\d+', value):
                    new = str(int(value) + 1)
                elif value.startswith('"'):
                    new = value[:-1] + '2"'
                else:
                    continue
                vat = name_end + 1 + m.start(2)
                out.append(('the default of `%s` of `%s` made %s' % (m.group(1), d.name, new),
                            splice(text, vat, vat + len(m.group(2).rstrip()), new)))
    else:
        for p, what in (('agr_level: int = 1', 'with a default'), ('agr_level: int', 'without a default')):
            out.append(('a parameter `%s` %s added to `%s`' % (p, what, d.name),
                        splice(text, name_end, name_end, '(' + p + ')')))
    return out


# ---- the versions -------------------------------------------------------------------------------

def candidates(path, name):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    cands = edits(text)
    # Unique by text (two ways to one program are one edit), in the file's order, then shuffled.
    seen = set()
    unique = []
    for what, new in cands:
        if new in seen or new == text:
            continue
        seen.add(new)
        unique.append((what, new))
    random.Random('agreement:' + name).shuffle(unique)
    return text, unique


def imports(path):
    """The files `path` imports (`import "x.jr2"`), as paths, which its versions import too: they
    are copied beside them."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    here = os.path.dirname(os.path.abspath(path))
    return [os.path.join(here, m.group(1))
            for m in re.finditer(r'^[ \t]*import\s+"([^"/]+)"', text, re.M)]


def copy_imports(path, to):
    for imported in imports(path):
        with open(imported, encoding='utf-8') as f:
            text = f.read()
        with open(os.path.join(to, os.path.basename(imported)), 'w', encoding='utf-8') as f:
            f.write(text)


def checks(jr2c, text, name, path):
    """Whether `jr2c check` accepts `text` as NAME.jr2 (warnings allowed), and its first line."""
    with tempfile.TemporaryDirectory() as d:
        copy_imports(path, d)
        p = os.path.join(d, name + '.jr2')
        with open(p, 'w', encoding='utf-8') as f:
            f.write(text)
        r = subprocess.run([jr2c, 'check', p], capture_output=True, text=True)
        first = (r.stdout + r.stderr).strip().split('\n')[0]
        return r.returncode == 0, first


def versions(path, name, n, jr2c):
    """Version 0 (the file) and versions 1..n: the first n candidates `jr2c check` accepts, each
    with what it is (`edit` null for a version left as the file, when fewer than n check)."""
    text, cands = candidates(path, name)
    out = [(text, {'edit': 'the file as it is'})]
    refused = []
    for what, new in cands:
        if len(out) > n:
            break
        ok, why = checks(jr2c, new, name, path)
        if ok:
            out.append((new, {'edit': what}))
        else:
            refused.append({'edit': what, 'refused': why})
    while len(out) <= n:
        out.append((text, {'edit': None}))
    out[0][1]['refused'] = refused
    return out


def externs(path):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    out = {}
    for m in re.finditer(r'^extern\s+(\w+)\s*\(', text, re.M):
        out[m.group(1)] = 'effect'
    for m in re.finditer(r'\b(next|read):\s*extern\s+(\w+)', text):
        out[m.group(2)] = m.group(1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('what', choices=['plan', 'emit', 'list'])
    ap.add_argument('file')
    ap.add_argument('--name', required=True)
    ap.add_argument('--versions', type=int, required=True)
    ap.add_argument('--jr2c')
    ap.add_argument('--out')
    a = ap.parse_args()
    if a.what == 'plan':
        print(json.dumps({'externs': externs(a.file),
                          'imports': [os.path.basename(i) for i in imports(a.file)]}))
        return 0
    made = versions(a.file, a.name, a.versions, a.jr2c)
    if a.what == 'list':
        for k, (_, info) in enumerate(made):
            print(k, json.dumps(info))
        return 0
    copy_imports(a.file, a.out)
    lines = []
    for k, (text, info) in enumerate(made):
        with open(os.path.join(a.out, 'agr_%s_v%02d.jr2' % (a.name, k)), 'w', encoding='utf-8') as f:
            f.write(text)
        info['file'] = os.path.relpath(a.file, ROOT)
        info['version'] = k
        lines.append(json.dumps(info))
    with open(os.path.join(a.out, 'agr_%s.edits' % a.name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
