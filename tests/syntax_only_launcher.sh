#!/bin/sh
# Compiler launcher of the test files built -fsyntax-only (FUSE_TEST_SYNTAX_ONLY): runs the compile,
# then leaves an empty object where the command names one (-o), which -fsyntax-only does not write.
# Without it Ninja found the object missing and compiled every such file again at each build.
"$@" || exit $?
out="" prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && out="$arg"
  prev="$arg"
done
[ -z "$out" ] || : > "$out"
