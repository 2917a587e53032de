import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import SIPPlugin

/// Counts the reads that reach the channel (it sits between the coalescing handler and the head).
private final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = Any
    var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

/// Whether the coalescing handler may hold reads (the test flips it).
private final class HoldSwitch: Sendable {
    let value = Atomic(false)
}

/// ``ReadCoalescing`` and ``AnswerWaits``: a shared socket's reads wait while only patient
/// exchanges (scheduled refreshes) await answers, and go at once otherwise. Time is the embedded
/// loop's, advanced by hand: nothing here depends on the machine's speed.
struct ReadCoalescingTests {
    private func channel(holding hold: HoldSwitch) throws -> (EmbeddedChannel, ReadCounter, ReadCoalescing) {
        let counter = ReadCounter()
        let coalescing = ReadCoalescing(delay: .milliseconds(20)) { hold.value.load(ordering: .relaxed) }
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(counter, coalescing)
        return (channel, counter, coalescing)
    }

    @Test func aReadWaitsForTheDelayWhileItMayBeHeldAndGoesAtOnceOtherwise() throws {
        let hold = HoldSwitch()
        let (channel, counter, _) = try channel(holding: hold)
        channel.read()
        #expect(counter.reads == 1)  // nothing patient waits: as without the handler
        hold.value.store(true, ordering: .relaxed)
        channel.read()
        channel.read()  // one held at a time: the second ask adds nothing
        #expect(counter.reads == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(19))
        #expect(counter.reads == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(counter.reads == 2)
        _ = try channel.finish()
    }

    @Test func anUrgentExchangeReleasesAHeldReadAtOnce() throws {
        let hold = HoldSwitch()
        hold.value.store(true, ordering: .relaxed)
        let (channel, counter, coalescing) = try channel(holding: hold)
        channel.read()
        #expect(counter.reads == 0)
        coalescing.release()
        #expect(counter.reads == 1)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(counter.reads == 1)  // the cancelled timer does not read again
        _ = try channel.finish()
    }

    @Test func readsMayBeHeldOnlyWhileEveryAwaitedAnswerIsPatient() {
        var waits = AnswerWaits()
        #expect(!waits.mayHoldReads)
        waits.begin(patient: true)
        waits.begin(patient: true)
        #expect(waits.mayHoldReads)
        waits.begin(patient: false)
        #expect(!waits.mayHoldReads)
        waits.end(patient: false)
        waits.end(patient: false)  // unmatched: clamped, never negative
        #expect(waits.mayHoldReads)
        waits.end(patient: true)
        waits.end(patient: true)
        #expect(!waits.mayHoldReads)
        waits.begin(patient: false)
        #expect(waits.urgent == 1 && waits.patient == 0)
    }
}
