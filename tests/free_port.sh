# free_port.sh — sourced by the test scripts that serve a tcp store on a port of their choosing: free_port prints one.
# A port below the kernel's ephemeral range (no outgoing connection takes
# one there between this choice and the store's bind) with no socket on it.
# (A port picked inside that range, 30000 + pid % 20000, was once taken by
# another test's connection: the rank meant to serve the store could not
# bind and the test failed.)
free_port() {
  local lo p i
  lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$lo" -gt 12000 ] 2>/dev/null || lo=32768
  for i in $(seq 50); do
    p=$((10000 + RANDOM % (lo - 10000)))
    [ -z "$(ss -Htan "sport = :$p" 2>/dev/null)" ] && break
  done
  echo "$p"
}
