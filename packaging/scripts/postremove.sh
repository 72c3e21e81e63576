#!/bin/sh
# postremove of the confine deb and rpm (deb: `purge`, rpm: 0 on erase): drop the disable link the
# postinstall may have made, once the profile itself is gone. Never fails the removal.
case "$1" in
  purge|0) [ -e /etc/apparmor.d/confine ] || rm -f /etc/apparmor.d/disable/confine ;;
esac
exit 0
