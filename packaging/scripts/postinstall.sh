#!/bin/sh
# postinstall of the confine deb and rpm (.goreleaser.yaml nfpms; deb: `configure`, rpm: 1 or 2).
# Loads the AppArmor profile /etc/apparmor.d/confine where AppArmor runs, so that an unprivileged confine
# keeps its mount layer on Ubuntu 23.10 and later (packaging/apparmor/confine says why). Never fails the
# install: confine works without the profile (it supervises metadata calls instead).
profile=/etc/apparmor.d/confine
disabled=/etc/apparmor.d/disable/confine
[ -f "$profile" ] || exit 0
# AppArmor userspace older than 4 (Debian 12, openSUSE Leap 15) knows neither abi/4.0 nor the `userns`
# rule, and its kernels do not restrict user namespaces: leave the profile disabled the way aa-disable
# does, so that loading all profiles at boot does not trip on it.
if [ -d /etc/apparmor.d ] && [ ! -e /etc/apparmor.d/abi/4.0 ]; then
  mkdir -p /etc/apparmor.d/disable 2>/dev/null && ln -sf "$profile" "$disabled" 2>/dev/null
  exit 0
fi
[ -e "$disabled" ] && exit 0  # disabled by the administrator
command -v apparmor_parser >/dev/null 2>&1 || exit 0
[ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ] || exit 0
apparmor_parser -r -T -W "$profile" ||
  echo "confine: could not load the AppArmor profile $profile; confine works without it (metadata: supervisor)" >&2
exit 0
