#!/usr/bin/env bash
# Starts or stops a local Redis Cluster for tests: 6 redis-server processes on free loopback ports
# (3 masters, 3 replicas), each in its own folder under DIR. TIDEQ_CLUSTER_PRIMARIES (default 3)
# and TIDEQ_CLUSTER_REPLICAS (replicas per primary, default 1) change the layout: any other than
# 3 and 1 is built by hand (slots split in equal ranges, CLUSTER MEET, CLUSTER REPLICATE), since
# `redis-cli --cluster create` wants at least 3 masters.
#   redis-cluster.sh start DIR   -> prints the seed list "127.0.0.1:P1,127.0.0.1:P2,..." when ready
#   redis-cluster.sh stop DIR    -> kills the nodes and removes DIR
# Extra redis-server arguments can be given in TIDEQ_CLUSTER_ARGS. With TIDEQ_CLUSTER_TLS=CERTDIR
# (holding ca.pem, cert.pem, key.pem) the nodes speak TLS only, to clients and to each other.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?DIR}

tls=${TIDEQ_CLUSTER_TLS:-}
primaries=${TIDEQ_CLUSTER_PRIMARIES:-3}
replicas=${TIDEQ_CLUSTER_REPLICAS:-1}
nodes=$((primaries * (1 + replicas)))
cli=(redis-cli)
if [ -n "$tls" ]; then cli=(redis-cli --tls --cacert "$tls/ca.pem"); fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

case "$cmd" in
start)
  mkdir -p "$dir"
  ports=()
  for _ in $(seq "$nodes"); do
    # cluster bus port = port + 10000 must be free too
    while :; do p=$(free_port); [ "$p" -lt 55000 ] && ! (echo >/dev/tcp/127.0.0.1/$((p + 10000))) 2>/dev/null && break; done
    ports+=("$p")
    mkdir -p "$dir/$p"
    if [ -n "$tls" ]; then
      listen=(--port 0 --tls-port "$p" --tls-cluster yes --tls-replication yes --tls-cert-file "$tls/cert.pem"
              --tls-key-file "$tls/key.pem" --tls-ca-cert-file "$tls/ca.pem" --tls-auth-clients no)
    else
      listen=(--port "$p")
    fi
    redis-server "${listen[@]}" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout 2000 --dir "$dir/$p" --save '' --appendonly no \
      --repl-diskless-sync yes --repl-diskless-sync-delay 0 --enable-debug-command local \
      --daemonize yes --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log" ${TIDEQ_CLUSTER_ARGS:-} >/dev/null
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 100); do "${cli[@]}" -p "$p" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  hosts=(); for p in "${ports[@]}"; do hosts+=("127.0.0.1:$p"); done
  if [ "$primaries" = 3 ] && [ "$replicas" = 1 ]; then
    "${cli[@]}" --cluster create "${hosts[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 &
    create=$!
    # redis-cli waits for the nodes to join with no time limit, and a handshake that timed out is
    # not tried again: seen on a loaded machine, the first node answered every other's MEET but
    # kept none of them, and the cluster never formed. From 5 s on, every 3 s, the first node
    # meets every other itself (harmless for a node it knows); after 60 s, the start fails.
    for i in $(seq 600); do
      kill -0 "$create" 2>/dev/null || break
      if [ "$i" -ge 50 ] && [ $((i % 30)) -eq 20 ]; then
        for p in "${ports[@]:1}"; do "${cli[@]}" -p "${ports[0]}" cluster meet 127.0.0.1 "$p" >/dev/null 2>&1 || true; done
      fi
      sleep 0.1
    done
    if kill -0 "$create" 2>/dev/null; then
      kill "$create"
      echo "the cluster did not form in 60 s: $(tail -c 2000 "$dir/create.log")" >&2
      exit 1
    fi
    wait "$create" || { cat "$dir/create.log" >&2; exit 1; }
  else
    # By hand: primary i serves the i-th of `primaries` equal slot ranges; the first node meets
    # every other; once all know each other, the replicas follow their primaries in turn.
    for i in $(seq 0 $((primaries - 1))); do
      "${cli[@]}" -p "${ports[$i]}" cluster addslotsrange $((i * 16384 / primaries)) $(((i + 1) * 16384 / primaries - 1)) >/dev/null
    done
    for p in "${ports[@]:1}"; do "${cli[@]}" -p "${ports[0]}" cluster meet 127.0.0.1 "$p" >/dev/null; done
    for r in $(seq 0 $((primaries * replicas - 1))); do
      port=${ports[$((primaries + r))]}
      id=$("${cli[@]}" -p "${ports[$((r % primaries))]}" cluster myid)
      for i in $(seq 600); do
        "${cli[@]}" -p "$port" cluster replicate "$id" 2>/dev/null | grep -q OK && break
        [ "$i" = 600 ] && { echo "node $port did not learn its primary in 60 s" >&2; exit 1; }
        sleep 0.1
      done
    done
  fi
  # Ready when every node says the cluster is ok and sees exactly as many masters as asked
  # (gossip can list replicas as masters for a while), and every replica is in sync.
  for _ in $(seq 300); do
    ok=1; synced=0
    for p in "${ports[@]}"; do
      "${cli[@]}" -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
      masters=$("${cli[@]}" -p "$p" cluster nodes 2>/dev/null | awk '$3 ~ /master/ && $3 !~ /fail/' | wc -l)
      [ "$masters" -eq "$primaries" ] || ok=0
      if "${cli[@]}" -p "$p" info replication 2>/dev/null | grep -q 'master_link_status:up'; then synced=$((synced + 1)); fi
    done
    [ "$ok" = 1 ] && [ "$synced" -ge $((primaries * replicas)) ] && break
    sleep 0.1
  done
  (IFS=,; echo "${hosts[*]}")
  ;;
stop)
  for pid in "$dir"/*/redis.pid; do [ -f "$pid" ] && kill -9 "$(cat "$pid")" 2>/dev/null || true; done
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
