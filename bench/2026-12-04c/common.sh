# sourced by each call script on the device (the older calls'; bench/device-call.sh, which does the
# same and gives the helpers of later calls, is now the one copy: copy it into .devscripts/ too)
source .devscripts/device-call.sh
