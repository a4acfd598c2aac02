package ranged

import "encoding/binary"

// zipMember is what a zip's central directory says of one member.
type zipMember struct {
	off   int64 // its local header's offset
	nl    int64 // the name's length
	xl    int64 // the central extra field's length
	csize int64 // the stored (compressed) size; -1 when in a zip64 field
}

// zipMembers reads the members listed in cd, a zip central directory read
// from a file of size bytes. Only what the bytes say is used and nothing
// is trusted: a member outside the file is left out, and a damaged entry
// ends the list.
func zipMembers(cd []byte, size int64) []zipMember {
	var out []zipMember
	for len(cd) >= 46 && binary.LittleEndian.Uint32(cd) == 0x02014b50 {
		nl := int64(binary.LittleEndian.Uint16(cd[28:]))
		xl := int64(binary.LittleEndian.Uint16(cd[30:]))
		cl := int64(binary.LittleEndian.Uint16(cd[32:]))
		if 46+nl+xl+cl > int64(len(cd)) {
			break
		}
		off := int64(binary.LittleEndian.Uint32(cd[42:]))
		if off == 0xffffffff {
			off = zip64Offset(cd[46+nl:46+nl+xl], cd)
		}
		csize := int64(binary.LittleEndian.Uint32(cd[20:]))
		if csize == 0xffffffff {
			csize = -1
		}
		if off >= 0 && off < size {
			out = append(out, zipMember{off: off, nl: nl, xl: xl, csize: csize})
		}
		cd = cd[46+nl+xl+cl:]
	}
	return out
}

// zipLocalHeaders returns what a reader of each member's local header
// reads: its 30 bytes and the name (as long as the central entry's,
// unless the archive lies, when that read goes to the network as any
// other).
func zipLocalHeaders(cd []byte, size int64) []Range {
	var out []Range
	for _, m := range zipMembers(cd, size) {
		out = append(out, Range{Off: m.off, Len: 30 + m.nl})
	}
	return out
}

// zip64Offset reads the local header offset from a zip64 extra field: it
// follows the uncompressed and compressed sizes when those are 0xffffffff
// in the central entry.
func zip64Offset(x, entry []byte) int64 {
	for len(x) >= 4 {
		id, n := binary.LittleEndian.Uint16(x), int(binary.LittleEndian.Uint16(x[2:]))
		if 4+n > len(x) {
			return -1
		}
		if id == 1 {
			d := x[4 : 4+n]
			skip := 0
			if binary.LittleEndian.Uint32(entry[24:]) == 0xffffffff {
				skip += 8
			}
			if binary.LittleEndian.Uint32(entry[20:]) == 0xffffffff {
				skip += 8
			}
			if len(d) < skip+8 {
				return -1
			}
			return int64(binary.LittleEndian.Uint64(d[skip:]))
		}
		x = x[4+n:]
	}
	return -1
}
