import Testing

@testable import SIPPlugin

struct DialogTests {
    @Test func localCSeqGrowsAndSaturatesBelowTwoToThe31() {
        var dialog = Dialog(callID: "c", localTag: "l")
        let one = dialog.nextLocalCSeq()
        let two = dialog.nextLocalCSeq()
        #expect(one == 1 && two == 2)
        for _ in 0..<3 { _ = dialog.nextLocalCSeq() }
        #expect(dialog.localCSeq == 5)
        var old = Dialog(callID: "c", localTag: "l", localCSeq: Dialog.maximumCSeq - 1)
        let last = old.nextLocalCSeq()
        let saturated = old.nextLocalCSeq()
        #expect(last == Dialog.maximumCSeq && saturated == Dialog.maximumCSeq)
        #expect(Dialog(callID: "c", localTag: "l", localCSeq: .max).localCSeq == Dialog.maximumCSeq)
    }

    @Test func aConfirmedDialogKeepsItsRemoteTag() {
        var dialog = Dialog(callID: "c", localTag: "l")
        #expect(!dialog.isConfirmed)
        let first = dialog.confirm(remoteTag: "r1")
        let again = dialog.confirm(remoteTag: "r1")
        let other = dialog.confirm(remoteTag: "r2")
        #expect(first && again && !other)
        #expect(dialog.id == Dialog.ID(callID: "c", localTag: "l", remoteTag: "r1"))
    }

    @Test func aRequestWithALowerCSeqIsOutOfOrder() {
        var dialog = Dialog(callID: "c", localTag: "l")
        var request = SIPMessage.request("NOTIFY", uri: "sip:a@198.18.0.2")
        request.headers.add("Contact", "<sip:notifier@198.18.0.1:5070>")
        let first = dialog.accept(request: request, cseq: 7)
        #expect(first)
        #expect(dialog.remoteTarget == "sip:notifier@198.18.0.1:5070")
        let same = dialog.accept(request: request, cseq: 7)
        let lower = dialog.accept(request: request, cseq: 6)
        #expect(same && !lower)
        #expect(dialog.remoteCSeq == 7)
    }

    @Test func aTwoHundredSetsTargetAndReversedRouteSet() {
        var dialog = Dialog(callID: "c", localTag: "l")
        var response = SIPMessage(startLine: .response(status: 200, reason: "OK"))
        response.headers.add("Contact", "<sip:n@198.18.0.1>;expires=60")
        response.headers.add("Record-Route", "<sip:p1@198.18.0.10;lr>, <sip:p2@198.18.0.11;lr>")
        dialog.update(fromResponse: response)
        #expect(dialog.remoteTarget == "sip:n@198.18.0.1")
        #expect(dialog.routeSet == ["<sip:p2@198.18.0.11;lr>", "<sip:p1@198.18.0.10;lr>"])
        // A refresh without Record-Route keeps the route set (§12.2.1.2).
        var refresh = SIPMessage(startLine: .response(status: 200, reason: "OK"))
        refresh.headers.add("Contact", "<sip:n@198.18.0.1>")
        dialog.update(fromResponse: refresh)
        #expect(dialog.routeSet.count == 2)
    }
}

struct DialogTableTests {
    typealias Table = DialogTable<String>

    @Test func aNotifyConfirmsTheOpenDialogThenMatchesItExactly() throws {
        var table = Table()
        let dialog = Dialog(callID: "c", localTag: "l")
        let inserted = table.insert(dialog, owner: "sub")
        #expect(inserted)
        let open = Dialog.ID(callID: "c", localTag: "l")
        #expect(table.match(callID: "c", localTag: "l", remoteTag: "r") == .dialog(open, owner: "sub"))
        let confirmed = try #require(table.modify(open) { $0.confirm(remoteTag: "r") })
        #expect(confirmed.remoteTag == "r")
        #expect(table.match(callID: "c", localTag: "l", remoteTag: "r") == .dialog(confirmed, owner: "sub"))
        #expect(table[open] == nil)
        #expect(table.count == 1)
    }

    @Test func anotherRemoteTagIsAForkAndSeveralDialogsShareACallID() throws {
        var table = Table()
        var first = Dialog(callID: "c", localTag: "l")
        first.confirm(remoteTag: "r1")
        let firstInserted = table.insert(first, owner: "sub")
        #expect(firstInserted)
        #expect(table.match(callID: "c", localTag: "l", remoteTag: "r2") == .fork(of: first.id, owner: "sub"))
        var fork = Dialog(callID: "c", localTag: "l")
        fork.confirm(remoteTag: "r2")
        let forkInserted = table.insert(fork, owner: "sub")
        let twice = table.insert(fork, owner: "sub")
        #expect(forkInserted && !twice, "the same ID twice is refused")
        #expect(table.match(callID: "c", localTag: "l", remoteTag: "r2") == .dialog(fork.id, owner: "sub"))
        #expect(table.match(callID: "c", localTag: "l", remoteTag: "r1") == .dialog(first.id, owner: "sub"))
        #expect(table.count == 2)
        table.removeAll(ownedBy: "sub")
        #expect(table.count == 0)
        #expect(table.match(callID: "c", localTag: "l", remoteTag: "r1") == .none)
    }

    @Test func unknownCallIDsAndTagsMatchNothing() {
        var table = Table()
        table.insert(Dialog(callID: "c", localTag: "l"), owner: "sub")
        #expect(table.match(callID: "x", localTag: "l", remoteTag: "r") == .none)
        #expect(table.match(callID: "c", localTag: "other", remoteTag: "r") == .none)
    }

    @Test func theTableRefusesInsertsPastItsCapacity() {
        var table = Table(capacity: 2)
        let a = table.insert(Dialog(callID: "a", localTag: "l"), owner: "1")
        let b = table.insert(Dialog(callID: "b", localTag: "l"), owner: "2")
        let full = table.insert(Dialog(callID: "c", localTag: "l"), owner: "3")
        #expect(a && b && !full)
        let removed = table.remove(Dialog.ID(callID: "a", localTag: "l"))
        let c = table.insert(Dialog(callID: "c", localTag: "l"), owner: "3")
        #expect(removed && c)
    }

    @Test func aModificationCannotChangeADialogsIdentity() {
        var table = Table()
        var dialog = Dialog(callID: "c", localTag: "l")
        dialog.confirm(remoteTag: "r")
        table.insert(dialog, owner: "sub")
        // Confirming an already confirmed dialog with another tag changes nothing.
        let after = table.modify(dialog.id) { $0.confirm(remoteTag: "other") }
        #expect(after == dialog.id)
    }
}
