# nextedit's coverage map of a Go module (the checkout, the working directory): each
# package's test binary built once with coverage of every package of the module, then
# each of its Test functions run alone with its own coverage profile. Writes into the
# directory given: `packages` (dir, import path), `tests.tsv` (package index, dir, test,
# microseconds, exit code) and `p<package>.<test>.cov`.
set -u
out="$1"
mkdir -p "$out"
: > "$out/tests.tsv"
go list -f '{{.Dir}} {{.ImportPath}}' ./... > "$out/packages" || exit 3
i=0
while read -r dir path; do
    i=$((i + 1))
    bin="$out/p$i.test"
    if ! go test -c -cover -covermode=set -coverpkg=./... -o "$bin" "$path"; then
        echo "nextedit: $path: its tests do not build" >&2
        continue
    fi
    # A package without tests has no test binary.
    [ -x "$bin" ] || continue
    (cd "$dir" && "$bin" -test.list '^Test') > "$out/p$i.list" || continue
    while read -r test; do
        case "$test" in Test*) ;; *) continue ;; esac
        start=$(date +%s%N)
        (cd "$dir" && "$bin" -test.run "^$test\$" -test.count=1 \
            -test.coverprofile="$out/p$i.$test.cov" > /dev/null 2>&1)
        code=$?
        end=$(date +%s%N)
        printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$dir" "$test" $(((end - start) / 1000)) "$code" >> "$out/tests.tsv"
    done < "$out/p$i.list"
    rm -f "$bin"
done < "$out/packages"
