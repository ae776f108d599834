#!/usr/bin/env python3
"""Layer check: data flows one way between the files of a crate, so no file may refer to a file
that refers back to it, directly or through others. Finds every cycle between files (strongly
connected component > 1) and the references that form it; exit 1 if any, else 0.

References are `use` trees and inline `crate::`/`super::`/`self::`/child-module paths (comments
and strings stripped), resolved to the file of the deepest module named. Names a module only
imports (`pub use child::X`, globs, `#[macro_export]`) are followed to the defining file unless
--no-follow-reexports, so a mod.rs hub is no dependency of what names items through it.
`mod x;` alone is no edge; `#[cfg(test)]` code is skipped unless --include-tests.
A file may use what its ancestor modules define (a parent declares its children); --strict\ncounts those references too.\nUsage: .ci/layers.py [--edges] [--include-tests] [--no-follow-reexports] [--strict]\n       [SRC_DIR ...=host/src]
"""
import argparse, bisect, os, re, sys

LEX = re.compile(r'//|/\*|\bb?r#*"|"|\'(?:\\(?:u\{\w+\}|x\w\w|.)|[^\\\'\n])\'')
TOK = re.compile(r'''(?P<brace>[{};])
  | \bmod\s+(?P<mod>\w+)\s*(?P<end>[;{])
  | (?P<use>\buse\b)
  | (?P<vis>\bpub\s*\(\s*in\s[^)]*\))
  | \b(?P<kind>fn|struct|enum|trait|type|const|static|union)\s+(?:mut\s+)?(?P<def>(?!fn\b)\w+)
  | \bmacro_rules!\s*(?P<mac>\w+)
  | (?<![\w:$.])(?P<path>\$?[a-z_]\w*(?:\s*::\s*\w+)+)''', re.X)
CFG_TEST = re.compile(r'#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]')
warn = lambda msg: print(f'warning: {msg}', file=sys.stderr)


def strip(src):
    """Blank out comments (doc comments too), string and char literals; keep offsets."""
    out, i = [], 0
    while (m := LEX.search(src, i)):
        t, j = m.group(), m.end()
        if t == '//':
            j = src.find('\n', j) % (len(src) + 1)
        elif t == '/*':
            depth = 1
            while depth and (n := re.compile(r'/\*|\*/').search(src, j)):
                depth, j = depth + (1 if n.group() == '/*' else -1), n.end()
        elif t == '"':
            while j < len(src) and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            j += 1
        elif t.endswith('"'):
            close = '"' + '#' * t.count('#')
            j = src.find(close, j) % (len(src) + 1) + len(close)
        out += [src[i:m.start()], re.sub(r'[^\n]', ' ', src[m.start():j])]
        i = j
    return ''.join(out) + src[i:]


def use_tree(body):
    """`a::{b::{c, self}, d as e, f::*}` -> [([a,b,c], c), ([a,b], b), ([a,d], e), ([a,f,*], None)]"""
    toks, out, prefixes, cur, alias = re.findall(r'[{},*]|\$?\w+', body), [], [[]], [], None
    for i, tok in enumerate(toks + [',']):
        if tok == '{':
            prefixes.append(prefixes[-1] + cur)
            cur = []
        elif tok in ',}':
            path = prefixes[-1] + cur[:-1] + [x for x in cur[-1:] if x != "self"]
            if cur:
                out.append((path, None if path[-1] == '*' else alias or path[-1]))
            cur, alias = [], None
            if tok == '}':
                prefixes.pop()
        elif i and toks[i - 1] == 'as':
            alias = tok
        elif tok != 'as':
            cur.append(tok)
    return out


class Crates:
    """Every crate rooted in one source dir: modules, definitions, imports and references."""

    def __init__(self, src):
        self.src, self.modules, self.defs, self.imports, self.globs = src, {}, {}, {}, {}
        self.refs, self.lib_name = [], None
        roots = [r for r in ('lib.rs', 'main.rs') if os.path.exists(os.path.join(src, r))]
        if len(roots) == 2:
            toml = os.path.join(src, '..', 'Cargo.toml')
            m = os.path.exists(toml) and re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"',
                                                   open(toml).read(), re.M | re.S)
            self.lib_name = m and m.group(1).replace('-', '_')
        todo = [(root, root, (), False) for root in roots]
        while todo:
            self.parse(*todo.pop(), todo)
        found = {os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src)
                 for f in fs if f.endswith('.rs')}
        skipped = sorted(found - set(self.modules.values()))
        if skipped:
            warn(f'not reached by mod declarations, skipped: {", ".join(skipped)}')

    def parse(self, crate, rel, modpath, file_test, todo):
        self.modules[(crate, modpath)] = rel
        raw = open(os.path.join(self.src, rel), encoding='utf-8').read()
        text, lines = strip(raw), [m.start() for m in re.finditer('\n', raw)]
        if '#[path' in text:
            warn(f'{rel}: #[path] is not supported')
        mod_rs = os.path.basename(rel) in ('mod.rs', 'lib.rs', 'main.rs')
        child_dir = os.path.dirname(rel) if mod_rs else rel[:-3]
        stack, item, pos = [], 0, 0       # stack: (inline module name or None, is test) per '{'

        def ctx(at):
            names = tuple(n for n, _ in stack if n)
            test = file_test or any(t for _, t in stack) or bool(CFG_TEST.search(text, item, at))
            return (crate, modpath + names, modpath), test, bisect.bisect(lines, at - 1) + 1

        while (m := TOK.search(text, pos)):
            pos = m.end()
            where, test, line = ctx(m.start())
            c, cur, _ = where
            if m['brace'] == '{' or m['end'] == '{':
                stack.append((m['mod'], test))
            elif m['brace'] == '}':
                stack and stack.pop()
            elif m['mod']:                  # `mod x;`: a file, no edge
                d = os.path.join(child_dir, *cur[len(modpath):], m['mod'])
                for cand in (d + '.rs', os.path.join(d, 'mod.rs')):
                    if os.path.exists(os.path.join(self.src, cand)):
                        todo.append((crate, cand, cur + (m['mod'],), test))
                        break
                else:
                    warn(f'{rel}:{line}: no file for mod {m["mod"]}')
            elif m['use']:
                end = text.find(';', pos)
                try:
                    for segs, name in use_tree(text[pos:end]):
                        self.refs.append((rel, line, 'use', segs, where, test))
                        if name is None:
                            self.globs.setdefault((c, cur), []).append((segs[:-1], where))
                        elif name != '_':
                            self.imports.setdefault((c, cur), {})[name] = (segs, where)
                except IndexError:  # unbalanced braces, mid-edit
                    warn(f'{rel}:{line}: cannot parse use')
                pos = item = end + 1
            elif (m['def'] or m['mac']) and all(n for n, _ in stack):   # module-level items
                value = m['kind'] in ('fn', 'const', 'static')   # not a path prefix: `f::x`
                self.defs.setdefault((c, cur), {})[m['def'] or m['mac']] = value
                if m['mac'] and re.search(r'#\s*\[\s*macro_export', text[item:m.start()]):
                    root = self.imports.setdefault((c, ()), {})   # exported at the crate root
                    root[m['mac']] = (['crate', *cur, m['mac']], where)
            elif m['path']:
                segs = re.split(r'\s*::\s*', m['path'])
                self.refs.append((rel, line, 'path', segs, where, test))
            if m['brace'] or m['end']:
                item = m.end()

    def absolute(self, segs, ctx):
        """Path as written in module ctx -> (crate, path) inside this dir, or None if external."""
        crate, cur, filemod = ctx
        if segs[0] in ('crate', '$crate'):
            return crate, tuple(segs[1:])
        if segs[0] in ('self', 'super'):
            base = list(cur)
            while segs and segs[0] in ('self', 'super'):
                if segs[0] == 'super':
                    if not base:
                        return None
                    base.pop()
                segs = segs[1:]
            return crate, tuple(base + segs)
        for scope in (cur, filemod):        # child module (or the file's, seen by `use super::*`)
            if (crate, scope + (segs[0],)) in self.modules:
                return crate, scope + tuple(segs)
        if segs[0] == self.lib_name and crate == 'main.rs':
            return 'lib.rs', tuple(segs[1:])
        return None

    def resolve(self, crate, path, follow, seen=frozenset()):
        """File defining the deepest module of path; following imports when asked."""
        k = len(path)
        while (crate, path[:k]) not in self.modules:
            k -= 1
        mod, rest = (crate, path[:k]), path[k:]
        defined = self.defs.get(mod, {}).get(rest[0] if rest else None)
        if follow and rest and rest[0] != '*' and (mod, rest[0]) not in seen \
                and (defined is None or defined and len(rest) > 1):
            seen = seen | {(mod, rest[0])}
            if rest[0] in self.imports.get(mod, {}):
                a = self.absolute(*self.imports[mod][rest[0]])
                return a and self.resolve(a[0], a[1] + rest[1:], follow, seen)
            globs = [self.absolute(*g) for g in self.globs.get(mod, [])]
            for a in filter(None, globs):
                known = (a[0], a[1] + rest[:1]) in self.modules or rest[0] in self.defs.get(a, {}) \
                    or rest[0] in self.imports.get(a, {})
                if known and (a, rest[0]) not in seen:
                    return self.resolve(a[0], a[1] + rest, follow, seen)
            if None in globs:               # a name no glob here provides comes from an extern one
                return None
        return self.modules[mod]

    def graph(self, follow, tests, strict=False):
        """{file: {target file: [(line, kind, path text, via re-export)]}}; unless strict, a
        file's references to its ancestor modules' files (what a parent defines for its
        children) are no edges: only a module and what it declares may know each other."""
        g = {f: {} for f in self.modules.values()}
        owner = {f: key for key, f in self.modules.items()}
        above = lambda f, t: owner[f][0] == owner[t][0] and \
            owner[f][1][:len(owner[t][1])] == owner[t][1]
        for rel, line, kind, segs, ctx, test in self.refs:
            a = None if test and not tests else self.absolute(segs, ctx)
            target = a and self.resolve(a[0], a[1], follow)
            if target and target != rel and (strict or not above(rel, target)):
                via = follow and target != self.resolve(a[0], a[1], False)
                g[rel].setdefault(target, []).append((line, kind, '::'.join(segs), via))
        return g


def cycles(g):
    """Strongly connected components of size > 1 (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def check(src, args):
    crates = Crates(src)
    g = crates.graph(not args.no_follow_reexports, args.include_tests, args.strict)
    other = cycles(crates.graph(args.no_follow_reexports, args.include_tests, args.strict))

    def edge(f, t, indent=''):
        (line, kind, text, via), more = g[f][t][0], len(g[f][t]) - 1
        name = lambda x: os.path.normpath(os.path.join(src, x))
        print(f'{indent}{name(f)} -> {name(t)} ({kind} {text} at line {line}'
              f'{", via re-export" if via else ""}{f"; +{more} more" if more else ""})')

    for f in sorted(g) if args.edges else ():
        for t in sorted(g[f]):
            edge(f, t)
    found = cycles(g)
    for n, comp in enumerate(found, 1):
        print(f'cycle {n}: {len(comp)} files')
        for f in comp:
            for t in sorted(set(g[f]) & set(comp)):
                edge(f, t, '  ')
        parts = sorted((k for k in (len(set(comp) & set(c)) for c in other) if k > 1), reverse=True)
        verdict = 'disappears' if not parts else 'remains' if parts == [len(comp)] else \
            f'partly remains, as cycles of {", ".join(map(str, parts))} of its {len(comp)} files'
        mode = 'with' if args.no_follow_reexports else 'without'
        print(f'  {mode} following re-exports: {verdict}')
    if not found:
        print(f'no cycles between {len(g)} files in {src}')
    if not args.no_follow_reexports:
        print(f'({len(other)} cycle(s) in {src} without following re-exports)')
    return bool(found)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('src', nargs='*', default=['host/src'], help='crate source dir(s)')
    p.add_argument('--edges', action='store_true', help='print every file -> file edge')
    p.add_argument('--include-tests', action='store_true', help='count #[cfg(test)] code')
    p.add_argument('--no-follow-reexports', action='store_true',
                   help='resolve a name a module re-exports to that module\'s file')
    p.add_argument('--strict', action='store_true',
                   help='count a file\'s references to its ancestor modules too')
    args = p.parse_args()
    found = [check(src, args) for src in args.src]    # every dir, even after a failure
    sys.exit(1 if any(found) else 0)


if __name__ == '__main__':
    main()
