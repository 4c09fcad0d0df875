// hyllama as a whole command, for bench/bench_whole_command.py: read each GGUF's header (the first 8 MiB,
// doubled until it parses, as hyllama's README advises) and print its architecture, key and tensor counts.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { ggufMetadata } from 'hyllama'

function header(path) {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    for (let want = 8 << 20; ; want *= 2) {
      const length = Math.min(want, size)
      const buffer = new Uint8Array(length)
      readSync(fd, buffer, 0, length, 0)
      try {
        return ggufMetadata(buffer.buffer)
      } catch (error) {
        if (!(error instanceof RangeError) || length === size) throw error
      }
    }
  } finally {
    closeSync(fd)
  }
}

for (const path of process.argv.slice(2)) {
  const { metadata, tensorInfos } = header(path)
  console.log(`${path}: ${metadata['general.architecture']}, ${Object.keys(metadata).length} keys, ${tensorInfos.length} tensors`)
}
