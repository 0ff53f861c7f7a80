package codec

import "encoding/binary"

// SizeLen is the length of the int32 size that prefixes every Kafka frame.
const SizeLen = 4

// FrameSize reads the size prefix of a frame; b must hold at least 4 bytes.
func FrameSize(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// LooksLikeTLS tells whether a frame size is in fact the start of a TLS
// record (0x16 0x03 0x0N): a TLS client speaking to a plaintext port shows up
// as a frame of about 369 MB.
func LooksLikeTLS(size int32) bool {
	return uint32(size)>>16 == 0x1603 && (uint32(size)>>8)&0xff <= 0x04
}

// PutSize writes the size prefix for a frame of n bytes after the prefix.
func PutSize(b []byte, n int) { binary.BigEndian.PutUint32(b, uint32(n)) }
