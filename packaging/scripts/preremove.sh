#!/bin/sh
# preremove of the confine deb and rpm (deb: `remove`, rpm: 0 on erase; not on upgrade): unload the
# AppArmor profile while its file is still there. Never fails the removal.
case "$1" in
  remove|0) ;;
  *) exit 0 ;;
esac
if command -v apparmor_parser >/dev/null 2>&1 && [ -d /sys/kernel/security/apparmor ] &&
   grep -qx 'confine (unconfined)' /sys/kernel/security/apparmor/profiles 2>/dev/null; then
  apparmor_parser -R /etc/apparmor.d/confine >/dev/null 2>&1 || true
fi
exit 0
