# Shared by the end-to-end scripts (run under tests/with-cluster.sh or tests/local-only.sh):
# running a program with one platform visible, and comparing what its native and HiveCL runs
# printed.
failures=0

# Runs a command with one platform visible: `side` is native or hivecl.
on() {
  local spec
  if [ "$1" = native ]; then spec=$HIVECL_TEST_ICD_NATIVE; else spec=$HIVECL_TEST_ICD_HIVECL; fi
  shift
  # In-process (tests/local-only.sh) HiveCL alone, which the loader then lists alone, opens the
  # native library it serves by name.
  if [ "$spec" = "$HIVECL_TEST_ICD_HIVECL" ] && [ "${HIVECL_LOCAL_DEVICES:-}" = in-process ]; then
    HIVECL_LOCAL_LIBRARIES=${HIVECL_LOCAL_LIBRARIES:-${HIVECL_TEST_ICD_NATIVE#*:}} \
      OCL_ICD_VENDORS=${spec%%:*} OCL_ICD_FILENAMES=${spec#*:} "$@"
    return
  fi
  OCL_ICD_VENDORS=${spec%%:*} OCL_ICD_FILENAMES=${spec#*:} "$@"
}

# Compares the lines of both runs' outputs that match `pattern`.
same() {
  local what=$1 pattern=$2 native=$3 hivecl=$4
  if diff <(grep -E "$pattern" "$native") <(grep -E "$pattern" "$hivecl") >/dev/null && grep -qE "$pattern" "$native"; then
    echo "ok: $what"
  else
    echo "FAILED: $what"; echo "--- native:"; cat "$native"; echo "--- HiveCL:"; cat "$hivecl"
    failures=$((failures + 1))
  fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
