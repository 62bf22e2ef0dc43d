#!/bin/sh
# Turns a page that ArgumentParser's generate-manual wrote from a program's --help into the
# package's man page: paragraphs as .Pp (groff warns of empty input lines), the help's upper-case
# headings as subsections, no `subcommand` in the synopsis of a program whose only subcommand is
# ArgumentParser's own `help`, and a SEE ALSO section.
# Usage: packaging/man-page.sh PAGE.8 > page
set -e
page=$1
program=$(basename "$page" .8)
case $program in
    taxiunitd) see_also='.Xr taxiunitctl 8 ,\n.Xr taxiunitd.toml 5 ,\n.Xr journalctl 1 ,\n.Xr systemd.service 5' ;;
    taxiunitctl) see_also='.Xr taxiunitd 8 ,\n.Xr taxiunitd.toml 5' ;;
    taxifleet) see_also='.Xr taxiunitd 8 ,\n.Xr taxiunitctl 8 ,\n.Xr mosquitto 8' ;;
    *) echo "man-page.sh: no SEE ALSO for $program" >&2; exit 1 ;;
esac
subcommands=$(grep -c '^\.It Em ' "$page" || true)
only_help=$([ "$subcommands" = 1 ] && grep -q '^\.It Em help$' "$page" && echo 1 || echo 0)
awk -v only_help="$only_help" -v see_also="$see_also" '
    only_help && /^\.Ar subcommand$/ { next }
    only_help && /^\.It Em help$/ { skipping = 1; next }
    skipping { if ($0 == ".El") skipping = 0; next }
    /^$/ { print ".Pp"; next }
    /^[A-Z][A-Z ]+$/ { print ".Ss " $0; next }
    { print }
    END { gsub(/\\n/, "\n", see_also); print ".Sh SEE ALSO"; print see_also }
' "$page"
