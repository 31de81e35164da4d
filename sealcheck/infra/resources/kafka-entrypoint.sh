#!/bin/bash
# Entrypoint of the sealcheck-kafka image: one KRaft broker+controller.
#   NODE_ID (1), VOTERS (1@<this ip>:9093), CLUSTER_ID (required), REPLICATION (1),
#   ADVERTISED_HOST (this container's IP), HEAP_MB (512).
set -euo pipefail
node_id=${NODE_ID:-1}
host=${ADVERTISED_HOST:-$(hostname -i | awk '{print $1}')}
voters=${VOTERS:-$node_id@$host:9093}
rf=${REPLICATION:-1}
isr=1; [ "$rf" -ge 3 ] && isr=2
heap=${HEAP_MB:-512}
mkdir -p /var/lib/kafka/data
cat > /etc/kafka.properties <<PROPS
process.roles=broker,controller
node.id=$node_id
controller.quorum.voters=$voters
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093
advertised.listeners=PLAINTEXT://$host:9092
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=/var/lib/kafka/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
auto.create.topics.enable=false
unclean.leader.election.enable=false
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
background.threads=2
PROPS
java_opts=(-Xms256m "-Xmx${heap}m" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
  -Dlog4j2.configurationFile=/opt/sealcheck/kafka-log4j2.properties -cp '/opt/kafka/libs/*')
if [ ! -e /var/lib/kafka/data/meta.properties ]; then
  java "${java_opts[@]}" kafka.tools.StorageTool format -t "${CLUSTER_ID:?CLUSTER_ID is required}" \
    -c /etc/kafka.properties
fi
exec java "${java_opts[@]}" kafka.Kafka /etc/kafka.properties
