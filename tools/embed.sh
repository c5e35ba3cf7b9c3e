#!/bin/sh
# embed.sh NAME FILE: print a C file defining `const char NAME[]` with FILE's bytes.
set -eu
name=$1
file=$2
printf '/* generated from %s by tools/embed.sh; do not edit */\n' "$file"
printf '#include <stddef.h>\n'
printf 'const char %s[] =\n' "$name"
# Escape backslashes and quotes; one C string literal per line.
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$/\\n"/' "$file"
printf ';\nconst size_t %s_len = sizeof(%s) - 1;\n' "$name" "$name"
