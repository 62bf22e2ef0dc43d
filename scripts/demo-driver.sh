#!/usr/bin/env bash
# The driver's console when the unit has no serial terminal configured: shows the unit's state once
# a second and turns single keys into `taxiunitctl press`. Ctrl-C ends it.
set -uo pipefail
ctl=$1
socket=$2
help="keys: d duty  a accept  r reject  h arrived  ENTER on board  c clear  n no-show  s SOS  (Ctrl-C: stop the demo)"
last=""
while true; do
    clear
    "$ctl" status --socket "$socket" 2>&1 | head -8
    echo
    echo "$help"
    [ -n "$last" ] && echo "> $last"
    if read -rsn1 -t 1 key; then
        case "$key" in
            d) input=duty ;; a) input=accept ;; r) input=reject ;; h) input=arrived ;;
            "") input=pob ;; c) input=clear ;; n) input=noshow ;; s) input=sos ;;
            *) input="" ;;
        esac
        [ -n "$input" ] && last="$input: $("$ctl" press "$input" --socket "$socket" 2>&1)"
    fi
done
