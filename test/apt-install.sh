# Sourced by .ci/run and test/prerequisites.sh: `apt_install [apt-get options] PACKAGE...`
# installs Debian packages even while another apt-get holds apt's locks (a second CI run
# beside this one, installing the same packages at the same time, failed with "Could not
# get lock /var/lib/dpkg/lock-frontend"). An install waits for dpkg's lock; the index
# update, which does not wait for its own, is tried again every 15 s for up to 10 minutes.
apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null 2>&1 && return 0
  local try
  for try in $(seq 1 40); do
    if apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 \
      && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null 2>&1; then
      return 0
    fi
    sleep 15
  done
  # the last try speaks, so that what apt-get refused is in the log
  apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null
}
