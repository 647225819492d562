# Sourced by the build scripts: a build step that may take minutes says where its log is
# when it starts and prints a line every 30 s while it runs, so that a cold `make test`
# or `make demo` is never silent.
#   progress_start NAME LOG   (prints nothing itself; the caller's start line names LOG)
#   progress_stop             (also run by the caller's EXIT trap)
_progress_pid=""
progress_start() {
  local name="$1" log="$2" began=$SECONDS
  progress_stop
  ( while sleep "${PROGRESS_INTERVAL:-30}"; do echo "$name: still building ($((SECONDS - began)) s; log: $log)" >&2; done ) &
  _progress_pid=$!
}
progress_stop() {
  [[ -z "$_progress_pid" ]] || kill "$_progress_pid" 2>/dev/null || true
  _progress_pid=""
}
