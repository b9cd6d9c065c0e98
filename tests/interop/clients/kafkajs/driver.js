// The kafkajs side of tests/test_interop_kafkajs.py: produce to, or consume in a group from,
// a groupbroker.
//
//   node driver.js produce BOOTSTRAP TOPIC START COUNT PARTITIONS
//   node driver.js consume BOOTSTRAP TOPIC GROUP CLIENT_ID
//
// produce sends the values m<START>..m<START+COUNT-1>, value m<i> to partition i%PARTITIONS,
// and exits 0 once the broker acknowledged all of them (acks=all). consume joins GROUP and
// prints each record as "partition offset value" on stdout; kafkajs commits after every batch
// (autoCommit with neither interval nor threshold). SIGTERM disconnects (LeaveGroup) and exits
// 0. kafkajs's own log goes to stderr, so stdout carries only records.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const toStderr = () => ({ namespace, label, log }) => {
  process.stderr.write(`${new Date().toISOString()} ${label} [${namespace}] ${JSON.stringify(log)}\n`)
}

function client (bootstrap, clientId) {
  return new Kafka({
    clientId,
    brokers: [bootstrap],
    logLevel: logLevel.INFO,
    logCreator: toStderr,
    retry: { initialRetryTime: 100, retries: 10 }
  })
}

async function produce (bootstrap, topic, start, count, partitions) {
  const producer = client(bootstrap, 'kafkajs-producer').producer()
  await producer.connect()
  const messages = []
  for (let i = start; i < start + count; i++) {
    messages.push({ value: `m${i}`, partition: i % partitions })
  }
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
}

async function consume (bootstrap, topic, group, clientId) {
  const consumer = client(bootstrap, clientId).consumer({
    groupId: group,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 100
  })
  let stopping = null
  const stop = () => {
    stopping = stopping || consumer.disconnect().then(() => process.exit(0), (err) => {
      process.stderr.write(`disconnect failed: ${err.stack}\n`)
      process.exit(1)
    })
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    process.stderr.write(`joined: ${JSON.stringify(payload)}\n`)
  })
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    process.stderr.write(`crashed: ${payload.error && payload.error.stack}\n`)
    process.exit(2)
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const lines = batch.messages.map((m) => `${batch.partition} ${m.offset} ${m.value}\n`)
      process.stdout.write(lines.join(''))
    }
  })
}

function main (argv) {
  const [mode, ...args] = argv
  if (mode === 'produce' && args.length === 5) {
    const [bootstrap, topic, ...numbers] = args
    return produce(bootstrap, topic, ...numbers.map(Number))
  }
  if (mode === 'consume' && args.length === 4) {
    return consume(...args)
  }
  throw new Error('usage: driver.js produce BOOTSTRAP TOPIC START COUNT PARTITIONS | ' +
                  'consume BOOTSTRAP TOPIC GROUP CLIENT_ID')
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`${err.stack}\n`)
  process.exit(1)
})
