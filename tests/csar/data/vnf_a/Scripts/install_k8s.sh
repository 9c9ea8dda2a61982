#!/bin/sh
# Stand-in for the Kubernetes installer a real cluster package ships.
set -eu
echo "installing Kubernetes on $(hostname)"
