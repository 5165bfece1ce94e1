#!/usr/bin/env bash
# Install headless Chromium for the dashboard's browser tests (package ui,
# TestBrowser), if it is missing: Debian's chromium package, through
# apt-get, with no input asked. Needs root (or sudo) on Debian or Ubuntu;
# .ci/run calls it when CI=true. Elsewhere, install Chromium or Chrome by
# hand, or point FDBQUEUE_CHROMIUM at one: without one the browser tests
# skip, saying so (and fail under CI=true).
#   scripts/install-chromium.sh
set -euo pipefail

for b in "${FDBQUEUE_CHROMIUM:-}" chromium chromium-browser google-chrome; do
	if [ -n "$b" ] && command -v "$b" >/dev/null 2>&1; then
		echo "chromium: $(command -v "$b") ($("$b" --version 2>/dev/null || echo 'version unknown'))"
		exit 0
	fi
done

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-chromium.sh: no chromium and no apt-get: install Chromium or Chrome, or set FDBQUEUE_CHROMIUM to one" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-chromium.sh: installing chromium needs root: run it as root, or install sudo" >&2
		exit 1
	fi
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Debian's chromium is the browser (Ubuntu's chromium-browser, the fallback, a snap
# wrapper); fonts-liberation gives the screenshots their text without the
# package's other recommends (a sandbox helper, printing, notifications).
$sudo apt-get update -q
if ! $sudo apt-get install -y -q --no-install-recommends chromium fonts-liberation; then
	$sudo apt-get install -y -q --no-install-recommends chromium-browser fonts-liberation
fi
for b in chromium chromium-browser; do
	if command -v "$b" >/dev/null 2>&1; then
		echo "chromium: installed $(command -v "$b") ($("$b" --version 2>/dev/null || echo 'version unknown'))"
		exit 0
	fi
done
echo "install-chromium.sh: apt-get installed no chromium" >&2
exit 1
