#!/bin/bash
# The docs stay true (issue 25, "the layout"). Run from the repository root (tests/lint.sh runs it,
# so `make lint` and `make test` do):
#
#   tests/docs-check.sh
#
# 1. Quotes. Test data shown in a page is quoted, not retyped: a fenced code block between
#
#        <!-- quote: tests/data/rank/memory.expected -->
#        ```json
#        ...the file, line for line...
#        ```
#        <!-- /quote -->
#
#    must hold exactly the file (or lines A to B of it: `<!-- quote: FILE lines A-B -->`), the path
#    relative to the repository root. The suite that checks the behaviour (tests/plan, tests/admit,
#    tests/rank, a VM scenario) keeps the file true; this keeps the page equal to the file.
# 2. Links. Every relative link of README.md and docs/*.md names a file that exists, and a
#    `#anchor` into a Markdown file names one of its headings (GitHub's slugs).
# 3. README.md is the door: at most 250 lines.
#
# Each problem is one line naming the page (and line) and the file; the exit status is 1 if any.
# POSIX tools only (awk, sed, cmp, diff); no build needed.
set -u
MAX_README_LINES=250
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

problem() {
        echo "docs-check: $*"
        fail=1
}

pages=(README.md)
for p in docs/*.md; do
        [ -f "$p" ] && pages+=("$p")
done

# ---- 3. README.md's length ---------------------------------------------------------------------
n=$(wc -l <README.md)
if [ "$n" -gt "$MAX_README_LINES" ]; then
        problem "README.md has $n lines, at most $MAX_README_LINES (move the reference into docs/)"
fi

# headings FILE: the GitHub anchors of FILE's headings, one a line (fenced blocks skipped).
headings() {
        awk '
        fence == "" && match($0, /^(```+|~~~+)/) { fence = substr($0, 1, RLENGTH); next }
        fence != "" { if (index($0, fence) == 1 && $0 ~ /^(`+|~+)[ \t]*$/) fence = ""; next }
        /^#+[ \t]/ {
                h = $0
                sub(/^#+[ \t]+/, "", h)
                sub(/[ \t]+#*[ \t]*$/, "", h)
                h = tolower(h)
                gsub(/[^a-z0-9 _-]/, "", h)
                gsub(/ /, "-", h)
                print h
        }' "$1"
}

for page in "${pages[@]}"; do
        dir=$(dirname "$page")
        # One pass over the page: quote blocks (their text into $tmp/q.N), links, malformed markers.
        rm -f "$tmp"/q.* "$tmp/records"
        awk -v out="$tmp" '
        function rec(s) { print s >(out "/records") }
        BEGIN { state = 0; n = 0 }
        # state 0: prose; 1: after a quote marker, before its fence; 2: inside its fence;
        # 3: after its fence, before <!-- /quote -->; 4: inside a fence that is not a quote.
        state == 2 {
                if (index($0, fence) == 1 && $0 ~ /^(`+|~+)[ \t]*$/) { close(out "/q." n); state = 3; next }
                print >(out "/q." n)
                next
        }
        state == 4 {
                if (index($0, fence) == 1 && $0 ~ /^(`+|~+)[ \t]*$/) state = 0
                next
        }
        state == 1 {
                if ($0 ~ /^[ \t]*$/) next
                if (match($0, /^(```+|~~~+)/)) {
                        fence = substr($0, 1, RLENGTH); state = 2; printf "" >(out "/q." n); next
                }
                rec("BAD\t" mline "\tthe quote marker is not followed by a fenced code block"); state = 0
        }
        state == 3 {
                if ($0 ~ /^[ \t]*$/) next
                if ($0 ~ /^[ \t]*<!-- \/quote -->[ \t]*$/) { state = 0; next }
                rec("BAD\t" mline "\tthe quoted block is not followed by <!-- /quote -->"); state = 0
        }
        /<!-- quote:/ {
                m = $0
                if (!match(m, /<!-- quote: [^ ]+( lines [0-9]+-[0-9]+)? -->/)) {
                        rec("BAD\t" NR "\tmalformed quote marker (<!-- quote: FILE --> or <!-- quote: FILE lines A-B -->)")
                        next
                }
                m = substr(m, RSTART + 12, RLENGTH - 16)
                split(m, w, " ")
                a = ""; b = ""
                if (w[2] == "lines") { split(w[3], r, "-"); a = r[1]; b = r[2] }
                n++; mline = NR; state = 1
                rec("QUOTE\t" NR "\t" n "\t" w[1] "\t" a "\t" b)
                next
        }
        /<!-- \/quote -->/ { rec("BAD\t" NR "\t<!-- /quote --> without a quote marker"); next }
        match($0, /^(```+|~~~+)/) { fence = substr($0, 1, RLENGTH); state = 4; next }
        {
                line = $0
                gsub(/`[^`]*`/, "", line)          # links are not looked for in code spans
                while (match(line, /\]\([^) \t]+\)/)) {
                        rec("LINK\t" NR "\t" substr(line, RSTART + 2, RLENGTH - 3))
                        line = substr(line, RSTART + RLENGTH)
                }
        }
        END {
                if (state == 1 || state == 2 || state == 3)
                        rec("BAD\t" mline "\tthe quote is not closed (a fenced block, then <!-- /quote -->)")
        }' "$page"
        [ -f "$tmp/records" ] || continue
        while IFS=$'\t' read -r kind line f1 f2 f3 f4; do
                case $kind in
                BAD)
                        problem "$page:$line: $f1"
                        ;;
                QUOTE)
                        n=$f1 file=$f2 a=$f3 b=$f4
                        if [ ! -f "$file" ]; then
                                problem "$page:$line: quotes $file, which does not exist"
                                continue
                        fi
                        if [ ! -f "$tmp/q.$n" ]; then
                                continue # reported as BAD
                        fi
                        if [ -n "$a" ]; then
                                total=$(awk 'END { print NR }' "$file")
                                if [ "$a" -lt 1 ] || [ "$b" -lt "$a" ] || [ "$b" -gt "$total" ]; then
                                        problem "$page:$line: quotes $file lines $a-$b, but it has $total lines"
                                        continue
                                fi
                                awk -v a="$a" -v b="$b" 'NR >= a && NR <= b' "$file" >"$tmp/want"
                                what="$file lines $a-$b"
                        else
                                awk 1 "$file" >"$tmp/want"
                                what=$file
                        fi
                        if ! cmp -s "$tmp/want" "$tmp/q.$n"; then
                                problem "$page:$line: the quoted block differs from $what (- the file, + the page):"
                                diff -u "$tmp/want" "$tmp/q.$n" | sed -n '3,22s/^/    /p'
                        fi
                        ;;
                LINK)
                        target=$f1
                        case $target in
                        http://* | https://* | mailto:* | file://*) continue ;;
                        esac
                        path=${target%%#*}
                        anchor=
                        case $target in *'#'*) anchor=${target#*#} ;; esac
                        if [ -z "$path" ]; then
                                resolved=$page
                        else
                                resolved=$dir/$path
                                if [ ! -e "$resolved" ]; then
                                        problem "$page:$line: link to $target: $resolved does not exist"
                                        continue
                                fi
                        fi
                        if [ -n "$anchor" ]; then
                                case $resolved in
                                *.md)
                                        if ! headings "$resolved" | grep -qxF -- "$anchor"; then
                                                problem "$page:$line: link to $target: no heading of $resolved has the anchor #$anchor"
                                        fi
                                        ;;
                                esac
                        fi
                        ;;
                esac
        done <"$tmp/records"
done

exit $fail
