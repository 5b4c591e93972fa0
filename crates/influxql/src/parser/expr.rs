//! Expressions: operator precedence over InfluxQL's five binary levels (lowest first:
//! `OR`; `AND`; comparisons; `+ - | ^`; `* / % &`), all left-associative, then unary
//! minus, then operands (see `operand`).
//!
//! The parser is iterative: parentheses and call arguments push a [`Frame`] on a heap
//! stack instead of recursing, so nesting costs no native stack (debug builds spend
//! kilobytes per recursive call, which would make even modest nesting overflow a 2 MiB
//! thread). [`MAX_NESTING`](super::MAX_NESTING) still bounds the frames so that a run
//! of `(` cannot make the stack grow without limit, and every node's tree depth is
//! tracked so that [`MAX_EXPR_DEPTH`](super::MAX_EXPR_DEPTH) is enforced as it grows.
//!
//! A unary minus directly before a number or duration literal makes a negative literal
//! (`-1` is `Integer(-1)`, `-5m` is `Duration(-300000000000)`); before anything else,
//! `-x` becomes `-1 * x` (what InfluxDB does too), so the tree needs no unary node.

use smallvec::{SmallVec, smallvec};

use super::{MAX_EXPR_DEPTH, Parser};
use crate::ast::{BinaryOp, Expr};
use crate::error::ParseError;
use crate::lexer::Tok;

/// An expression and the depth of its tree (a leaf is 1).
type WithDepth = (Expr, usize);

/// What [`Parser::operand`] found.
pub(super) enum Operand {
    /// A complete expression without sub-expressions to parse (`DISTINCT x` included).
    Leaf(Expr),
    /// `(` at this byte offset, consumed.
    Paren(usize),
    /// A call's name (lowercased) and where it starts; its `(` is the next token.
    Call(String, usize),
}

/// The binary operator `tok` stands for, with its precedence (higher binds tighter).
fn binary_op(tok: &Tok) -> Option<(BinaryOp, u8)> {
    let op = match tok {
        Tok::Keyword("OR") => (BinaryOp::Or, 1),
        Tok::Keyword("AND") => (BinaryOp::And, 2),
        Tok::Eq => (BinaryOp::Eq, 3),
        Tok::NotEq => (BinaryOp::NotEq, 3),
        Tok::Lt => (BinaryOp::Lt, 3),
        Tok::LtEq => (BinaryOp::LtEq, 3),
        Tok::Gt => (BinaryOp::Gt, 3),
        Tok::GtEq => (BinaryOp::GtEq, 3),
        Tok::EqRegex => (BinaryOp::RegexMatch, 3),
        Tok::NotEqRegex => (BinaryOp::RegexNotMatch, 3),
        Tok::Plus => (BinaryOp::Add, 4),
        Tok::Minus => (BinaryOp::Sub, 4),
        Tok::Pipe => (BinaryOp::BitOr, 4),
        Tok::Caret => (BinaryOp::BitXor, 4),
        Tok::Star => (BinaryOp::Mul, 5),
        Tok::Slash => (BinaryOp::Div, 5),
        Tok::Percent => (BinaryOp::Mod, 5),
        Tok::Amp => (BinaryOp::BitAnd, 5),
        _ => return None,
    };
    Some(op)
}

/// A binary operator waiting for its right operand.
struct PendingOp {
    /// The operator.
    op: BinaryOp,
    /// Its precedence.
    prec: u8,
    /// Byte offset of its token, for errors.
    start: usize,
}

/// What a [`Frame`] is parsing.
enum FrameKind {
    /// The whole expression.
    Top,
    /// The inside of `( … )` whose `(` is at this offset.
    Paren(usize),
    /// An argument of a call.
    Call {
        /// The function's name, lowercased.
        name: String,
        /// Byte offset of the name.
        start: usize,
        /// The arguments already parsed.
        args: Vec<Expr>,
        /// The greatest tree depth among them.
        depth: usize,
    },
}

/// One expression in the making: operands and operators not yet combined because an
/// operator that binds tighter may still follow.
struct Frame {
    /// What is being parsed.
    kind: FrameKind,
    /// Operands, with their tree depths; one more than `operators` between operands.
    /// Inline up to two: most frames hold one operand (a call's argument, a field) or
    /// two (`host = 'a'`), and a select list has many such frames.
    operands: SmallVec<[WithDepth; 2]>,
    /// Operators, in nondecreasing precedence from bottom to top (anything else has
    /// been folded already).
    operators: SmallVec<[PendingOp; 2]>,
    /// Offsets of the unary minuses before the operand being parsed, outermost first.
    minuses: Vec<usize>,
}

impl Frame {
    /// An empty frame.
    fn new(kind: FrameKind) -> Self {
        Self {
            kind,
            operands: SmallVec::new(),
            operators: SmallVec::new(),
            minuses: Vec::new(),
        }
    }
}

impl Parser<'_> {
    /// A whole expression.
    pub(super) fn expr(&mut self) -> Result<Expr, ParseError> {
        // Inline: `f(x)` and `(a OR b)` need two frames, and most expressions no more.
        let mut frames: SmallVec<[Frame; 3]> = smallvec![Frame::new(FrameKind::Top)];
        loop {
            // Operand position: an operand, or what opens a frame (then look again).
            let Some(mut operand) = self.operand_or_open(&mut frames)? else {
                continue;
            };
            // Operator position: add the operand to its frame; then either an operator
            // follows (back to operand position), or the frame is complete and its
            // value is an operand of the frame below.
            loop {
                let Some(frame) = frames.last_mut() else {
                    return Err(self.internal());
                };
                operand = self.apply_minuses(frame, operand)?;
                frame.operands.push(operand);
                if let Some(pending) = self.binary_operator()? {
                    while frame
                        .operators
                        .last()
                        .is_some_and(|top| top.prec >= pending.prec)
                    {
                        self.fold(frame)?;
                    }
                    let regex =
                        matches!(pending.op, BinaryOp::RegexMatch | BinaryOp::RegexNotMatch);
                    frame.operators.push(pending);
                    if !regex {
                        break;
                    }
                    // The right side of a regex match is a regex literal, never nested.
                    operand = (self.regex_operand()?, 1);
                    continue;
                }
                let Some(frame) = frames.pop() else {
                    return Err(self.internal());
                };
                match self.close(frame)? {
                    Closed::Done(expr) => return Ok(expr),
                    Closed::Operand(value) => operand = value,
                    Closed::NextArgument(frame) => {
                        frames.push(*frame);
                        break;
                    }
                }
            }
        }
    }

    /// At operand position: the operand if it is complete, or `None` after opening a
    /// frame (`(`, `name(`) or recording a unary minus.
    fn operand_or_open(
        &mut self,
        frames: &mut SmallVec<[Frame; 3]>,
    ) -> Result<Option<WithDepth>, ParseError> {
        let Some(frame) = frames.last_mut() else {
            return Err(self.internal());
        };
        if let Some(start) = self.minus()? {
            if let Some(lit) = self.negative_literal()? {
                return Ok(Some((lit, 1)));
            }
            self.enter(start)?;
            frame.minuses.push(start);
            return Ok(None);
        }
        match self.operand()? {
            Operand::Leaf(expr) => Ok(Some((expr, 1))),
            Operand::Paren(start) => {
                self.enter(start)?;
                frames.push(Frame::new(FrameKind::Paren(start)));
                Ok(None)
            }
            Operand::Call(name, start) => {
                self.expect(&Tok::LParen, "(")?;
                if self.eat(&Tok::RParen)? {
                    return Ok(Some((
                        Expr::Call {
                            name,
                            args: Vec::new(),
                        },
                        1,
                    )));
                }
                self.enter(start)?;
                let kind = FrameKind::Call {
                    name,
                    start,
                    args: Vec::new(),
                    depth: 0,
                };
                frames.push(Frame::new(kind));
                Ok(None)
            }
        }
    }

    /// Consumes a binary operator if one is next.
    fn binary_operator(&mut self) -> Result<Option<PendingOp>, ParseError> {
        let t = self.peek_ref()?;
        let Some((op, prec)) = binary_op(&t.tok) else {
            return Ok(None);
        };
        let start = t.start;
        self.next()?;
        Ok(Some(PendingOp { op, prec, start }))
    }

    /// Wraps `operand` in the frame's pending unary minuses, innermost first.
    fn apply_minuses(
        &mut self,
        frame: &mut Frame,
        operand: WithDepth,
    ) -> Result<WithDepth, ParseError> {
        let (mut expr, mut depth) = operand;
        while let Some(start) = frame.minuses.pop() {
            self.leave();
            depth = self.check_depth(depth + 1, start)?;
            expr = Expr::Binary {
                op: BinaryOp::Mul,
                lhs: Box::new(Expr::Integer(-1)),
                rhs: Box::new(expr),
            };
        }
        Ok((expr, depth))
    }

    /// Combines the top operator of `frame` with the two operands on top.
    fn fold(&self, frame: &mut Frame) -> Result<(), ParseError> {
        let (Some(pending), Some((rhs, rhs_depth)), Some((lhs, lhs_depth))) = (
            frame.operators.pop(),
            frame.operands.pop(),
            frame.operands.pop(),
        ) else {
            return Err(self.internal());
        };
        let depth = self.check_depth(lhs_depth.max(rhs_depth) + 1, pending.start)?;
        let expr = Expr::Binary {
            op: pending.op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        };
        frame.operands.push((expr, depth));
        Ok(())
    }

    /// Finishes a frame with no operator after its last operand.
    fn close(&mut self, mut frame: Frame) -> Result<Closed, ParseError> {
        while !frame.operators.is_empty() {
            self.fold(&mut frame)?;
        }
        let Some((expr, depth)) = frame.operands.pop() else {
            return Err(self.internal());
        };
        match frame.kind {
            FrameKind::Top => Ok(Closed::Done(expr)),
            FrameKind::Paren(start) => {
                self.expect(&Tok::RParen, ")")?;
                self.leave();
                let depth = self.check_depth(depth + 1, start)?;
                Ok(Closed::Operand((Expr::Paren(Box::new(expr)), depth)))
            }
            FrameKind::Call {
                name,
                start,
                mut args,
                depth: args_depth,
            } => {
                args.push(expr);
                let args_depth = args_depth.max(depth);
                let sep = self.next()?;
                match sep.tok {
                    Tok::Comma => Ok(Closed::NextArgument(Box::new(Frame::new(
                        FrameKind::Call {
                            name,
                            start,
                            args,
                            depth: args_depth,
                        },
                    )))),
                    Tok::RParen => {
                        self.leave();
                        let depth = self.check_depth(args_depth + 1, start)?;
                        Ok(Closed::Operand((Expr::Call { name, args }, depth)))
                    }
                    _ => Err(self.found(&sep, ", or )")),
                }
            }
        }
    }

    /// Fails when a node at `offset` would make the tree deeper than allowed.
    fn check_depth(&self, depth: usize, offset: usize) -> Result<usize, ParseError> {
        if depth > MAX_EXPR_DEPTH {
            return Err(self.error_at(
                offset,
                format!("expression too deeply nested: more than {MAX_EXPR_DEPTH} levels"),
            ));
        }
        Ok(depth)
    }

    /// A broken invariant of the frame stack; never expected, but an error beats a panic.
    fn internal(&self) -> ParseError {
        self.error_at(self.pos, "internal error: malformed expression stack")
    }
}

/// What closing a frame gives.
enum Closed {
    /// The whole expression.
    Done(Expr),
    /// A complete operand for the frame below (`( … )` or a call).
    Operand(WithDepth),
    /// A call with more arguments to come: the frame to push back (boxed: a frame holds
    /// its first operands inline, and only calls of several arguments get here).
    NextArgument(Box<Frame>),
}
