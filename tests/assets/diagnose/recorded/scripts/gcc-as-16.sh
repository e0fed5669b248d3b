#!/bin/sh
exec /usr/bin/gcc -U__GNUC__ -D__GNUC__=16 "$@"
