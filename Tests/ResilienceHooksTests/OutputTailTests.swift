import ResilienceHooks
import Testing

@Suite struct OutputTailTests {
    @Test func keepsOnlyTheLastBytesHoweverMuchIsAppended() {
        var tail = OutputTail(capacity: 8)
        for round in 0..<1000 { tail.append(Array("line \(round)\n".utf8)) }
        #expect(tail.bytes.count == 8)
        #expect(String(decoding: tail.bytes, as: UTF8.self) == "ine 999\n")
        #expect(tail.total == (0..<1000).reduce(0) { $0 + UInt64("line \($1)\n".utf8.count) })
    }

    @Test func aChunkLargerThanTheCapacityKeepsItsEnd() {
        var tail = OutputTail(capacity: 4)
        tail.append(Array("ab".utf8))
        tail.append(Array("0123456789".utf8))
        #expect(String(decoding: tail.bytes, as: UTF8.self) == "6789")
    }

    @Test func lastLinesJoinsTheNewestLinesAndEscapesControlCharacters() {
        var tail = OutputTail(capacity: 64)
        tail.append(Array("one\ntwo\nthree\u{1b}[31m\n".utf8))
        #expect(tail.lastLines(2) == "two | three\\u{1b}[31m")
    }
}
