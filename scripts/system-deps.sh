#!/usr/bin/env bash
# The system packages gpujob's demo and tests need, and how to get them. One list for `make install`,
# `.ci/run` and the README; to add a requirement, add one line to NEEDS below.
#
#   scripts/system-deps.sh check     exit 0 when everything is there, else one line: what to install
#   scripts/system-deps.sh install   install what is missing with apt-get / dnf / brew: directly as root,
#                                    with sudo otherwise; on a terminal it asks first. Without a terminal
#                                    it installs only as root or with GPUJOB_INSTALL_YES=1 (sudo -n),
#                                    else it prints the one command to run and exits 1.
#   scripts/system-deps.sh list      the table, for humans
set -euo pipefail

# what to look for | apt package | dnf package | brew package | why          ("-": not needed there)
NEEDS=(
  "sshd|openssh-server|openssh-server|-|the simulator's pods are real OpenSSH servers (macOS ships sshd)"
  "ssh|openssh-client|openssh-clients|-|the tests and \`gpujob ssh\`"
  "ssh-keygen|openssh-client|openssh-clients|-|host and project keys"
  "tmux|tmux|tmux|tmux|runs the training detached on the pod"
  "rsync|rsync|rsync|rsync|the tests and benchmarks compare code sync against it"
  "unshare|util-linux|util-linux|-|namespace pods (Linux)"
  "ps|procps|procps-ng|-|process checks in the tests"
  "initdb|postgresql|postgresql-server|postgresql@16|the state-store tests start a throwaway PostgreSQL"
  "python-venv|python3-venv|-|-|\`make install\` makes .venv when the system Python is externally managed"
  "gnu-find|-|-|findutils|plain pods on macOS run GNU find"
  "gnu-coreutils|-|-|coreutils|plain pods on macOS run GNU stat, sha256sum"
)

os=$(uname -s)

have() {  # have WHAT: is the requirement met on this machine?
  # Tests name requirements to treat as missing in this file (one per line; a fake installer edits it).
  if [ -n "${GPUJOB_DEPS_PRETEND_MISSING:-}" ] && grep -qx -- "$1" "$GPUJOB_DEPS_PRETEND_MISSING" 2>/dev/null; then
    return 1
  fi
  case "$1" in
    sshd) command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || [ -x /usr/local/sbin/sshd ] \
            || [ -x /opt/homebrew/sbin/sshd ] ;;
    unshare|ps) [ "$os" != Linux ] || command -v "$1" >/dev/null ;;
    initdb) command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
            || compgen -G '/usr/pgsql-*/bin/initdb' >/dev/null \
            || compgen -G '/opt/homebrew/opt/postgresql*/bin/initdb' >/dev/null \
            || compgen -G '/usr/local/opt/postgresql*/bin/initdb' >/dev/null ;;
    python-venv) "${PYTHON:-python3}" -c 'import venv, ensurepip' >/dev/null 2>&1 ;;
    gnu-find) [ "$os" != Darwin ] || command -v gfind >/dev/null ;;
    gnu-coreutils) [ "$os" != Darwin ] || command -v gstat >/dev/null ;;
    *) command -v "$1" >/dev/null ;;
  esac
}

manager() {
  if [ "$os" = Darwin ]; then command -v brew >/dev/null && echo brew && return; fi
  command -v apt-get >/dev/null && echo apt && return
  command -v dnf >/dev/null && echo dnf && return
  echo none
}

missing_packages() {  # missing_packages MANAGER: packages to install (deduplicated, in order)
  local col=2 seen=" " line what pkg
  case "$1" in dnf) col=3 ;; brew) col=4 ;; none) col=2 ;; esac
  for line in "${NEEDS[@]}"; do
    what=${line%%|*}
    have "$what" && continue
    pkg=$(printf '%s' "$line" | cut -d'|' -f"$col")
    [ "$pkg" = - ] && continue
    case "$seen" in *" $pkg "*) continue ;; esac
    seen="$seen$pkg "
    printf '%s\n' "$pkg"
  done
}

install_command() {  # install_command MANAGER PKG...: the one command line that installs them
  local m=$1; shift
  local sudo=""
  [ "$m" != brew ] && [ "$(id -u)" != 0 ] && sudo="sudo "
  case "$m" in
    apt) echo "${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" ;;
    dnf) echo "${sudo}dnf install -y $*" ;;
    brew) echo "brew install $*" ;;
  esac
}

python_ok() {
  "${PYTHON:-python3}" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

cmd=${1:-check}
m=$(manager)
pkgs=()  # (no mapfile: macOS ships bash 3.2)
while IFS= read -r p; do pkgs+=("$p"); done < <(missing_packages "$m")

if [ "$cmd" = list ]; then
  printf '%-14s %-16s %-18s %-14s %s\n' need apt dnf brew why
  for line in "${NEEDS[@]}"; do IFS='|' read -r a b c d e <<<"$line"; printf '%-14s %-16s %-18s %-14s %s\n' "$a" "$b" "$c" "$d" "$e"; done
  exit 0
fi

if ! python_ok; then
  echo "gpujob needs Python >= 3.11 as ${PYTHON:-python3} (found: $("${PYTHON:-python3}" -V 2>&1 || echo none)); install one (python.org, pyenv, uv, or your package manager) and run make install PYTHON=/path/to/python3.11" >&2
  exit 1
fi

if [ "${#pkgs[@]}" -eq 0 ]; then
  [ "$cmd" = check ] || echo "system packages: all present"
  exit 0
fi

if [ "$m" = none ]; then
  needs=$(for line in "${NEEDS[@]}"; do w=${line%%|*}; have "$w" || printf '%s ' "$w"; done)
  echo "gpujob needs these system tools, and no apt-get, dnf or brew was found to install them: ${needs% }" >&2
  exit 1
fi

line=$(install_command "$m" "${pkgs[@]}")
if [ "$cmd" = check ]; then
  echo "missing system packages: ${pkgs[*]}; install them with: $line  (or run: make install)" >&2
  exit 1
fi

note=""
case " ${pkgs[*]} " in *" openssh-server "*)
  note=" (Debian/Ubuntu start the system ssh service on install; gpujob only uses the sshd program: 'sudo systemctl disable --now ssh' turns the service off)" ;;
esac
if [ -t 0 ] && [ -z "${GPUJOB_INSTALL_YES:-}" ]; then
  printf 'gpujob needs: %s%s\nRun: %s ? [Y/n] ' "${pkgs[*]}" "$note" "$line"
  read -r answer
  case "$answer" in ""|y|Y|yes|YES) ;; *) echo "not installed; run it yourself, then make install again" >&2; exit 1 ;; esac
elif [ "$(id -u)" != 0 ] && [ "$m" != brew ]; then
  if [ -z "${GPUJOB_INSTALL_YES:-}" ] || ! sudo -n true 2>/dev/null; then
    echo "missing system packages: ${pkgs[*]}; install them with: $line  (or run make install on a terminal, or with GPUJOB_INSTALL_YES=1 and passwordless sudo)" >&2
    exit 1
  fi
fi
echo "installing: ${pkgs[*]}$note"
bash -c "$line"
still=$(missing_packages "$m" | tr '\n' ' ')
if [ -n "$still" ]; then
  echo "still missing after the install: $still" >&2
  exit 1
fi
